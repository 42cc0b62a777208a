// A deployed podhook for `podhook listen` tests: a Node `podhook serve` or the Worker under
// `wrangler dev --local`, each spawned on 127.0.0.1 with its own database, ADMIN_TOKEN set and
// its dispatcher off (so the remote's rows keep the statuses the test gave them).
import { waitReady } from './replicas.js';
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ExportRecord } from '../../src/core/transfer/delivery-export.js';
import { freePort } from './free-port.js';
import { TEST_SECRET } from './sign.js';
import { runCli, spawnServer } from './spawn-podhook.js';

export const ADMIN_TOKEN = 'adm_listen_0123456789abcdef0123456789ab';
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** The installed wrangler's command, run by this Node (what `npx wrangler` runs, without npm's own process first). */
const WRANGLER = fileURLToPath(new URL('../../node_modules/wrangler/bin/wrangler.js', import.meta.url));

export interface RemotePodhook {
  url: string;
  output(): string;
  close(): Promise<void>;
}

/**
 * A Node `podhook serve` whose database first gets `seed` through `podhook import` (when there
 * is one): the SQLite file remote.db, or the PostgreSQL database at `databaseUrl`.
 */
export async function startNodeRemote(dir: string, seed: readonly ExportRecord[], databaseUrl?: string): Promise<RemotePodhook> {
  const env = {
    DATABASE_PATH: join(dir, 'remote.db'),
    ...(databaseUrl === undefined ? {} : { DATABASE_URL: databaseUrl }),
    SVC_WEBHOOK_SECRET: TEST_SECRET,
    ADMIN_TOKEN,
    DISPATCHER: 'off',
  };
  // Nothing to seed: no `podhook import` (serve makes the database itself).
  if (seed.length > 0) {
    const file = join(dir, 'seed.jsonl');
    writeFileSync(file, seed.map((r) => `${JSON.stringify(r)}\n`).join(''));
    const imported = await runCli(['import', file], env);
    if (imported.code !== 0) throw new Error(`seed import failed: ${imported.stderr}`);
  }
  const server = await spawnServer(env);
  // "listening" comes before PostgreSQL is reached; until then the remote's API answers 503.
  if (databaseUrl !== undefined) await waitReady([server.url]);
  return {
    url: server.url,
    output: server.output,
    async close() {
      server.child.kill('SIGTERM');
      if (server.child.exitCode === null) await once(server.child, 'close');
    },
  };
}

/**
 * The Worker in workerd (`wrangler dev --local`) on a D1 database of its own: its schema as
 * `wrangler d1 migrations apply` leaves it, `seed` inserted first.
 */
export async function startWorkerRemote(dir: string, seed: readonly ExportRecord[]): Promise<RemotePodhook> {
  const env: NodeJS.ProcessEnv = { ...process.env, WRANGLER_SEND_METRICS: 'false', CLOUDFLARE_CF_FETCH_ENABLED: 'false', WRANGLER_HIDE_BANNER: 'true', NO_COLOR: '1' };
  delete env.CLOUDFLARE_API_TOKEN; // offline: no login, no account
  const persist = join(dir, 'wrangler-state');
  // The schema and the seed in one `wrangler d1 execute`: one local D1 started, where
  // `wrangler d1 migrations apply` starts one per migration file (most of this set-up's time).
  const file = join(dir, 'schema-and-seed.sql');
  writeFileSync(file, `${migrationsSql()}\n${seed.map(insertStatement).join('\n')}\n`);
  await runTool(process.execPath, [WRANGLER, 'd1', 'execute', 'DB', '--local', '--persist-to', persist, '--file', file], env);
  const [port, inspector] = [await freePort(), await freePort()];
  const child = spawn(
    process.execPath,
    [
      WRANGLER, 'dev', '--local', '--persist-to', persist, '--ip', '127.0.0.1', '--port', String(port), '--inspector-port', String(inspector),
      '--show-interactive-dev-session=false', '--var', `ADMIN_TOKEN:${ADMIN_TOKEN}`, '--var', `SVC_WEBHOOK_SECRET:${TEST_SECRET}`, '--var', 'DISPATCHER:off',
    ],
    { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true },
  );
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`wrangler dev did not start:\n${output}`)), 60_000);
    const onData = (chunk: Buffer) => {
      output += chunk;
      if (/Ready on http:\/\/127\.0\.0\.1:\d+/.test(output)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`wrangler dev exited with ${code}:\n${output}`)));
  });
  return {
    url: `http://127.0.0.1:${port}`,
    output: () => output,
    close: () => stopGroup(child),
  };
}

/** wrangler starts workerd below it: stop the process group this test started, by its id. */
async function stopGroup(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const closed = once(child, 'close');
  process.kill(-child.pid!, 'SIGTERM');
  await closed;
}

async function runTool(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  const child = spawn(command, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (c) => (output += c));
  child.stderr.on('data', (c) => (output += c));
  const [code] = (await once(child, 'close')) as [number | null];
  if (code !== 0) throw new Error(`${command} ${args.join(' ')} failed (${code}):\n${output}`);
  return output;
}

/** wrangler.toml's migrations_dir, and the ledger table `wrangler d1 migrations apply` keeps (its default name). */
const MIGRATIONS_DIR = join(ROOT, 'drizzle', 'sqlite');
const MIGRATIONS_TABLE = 'd1_migrations';

/**
 * What `wrangler d1 migrations apply DB` runs on an empty database, as one script: its ledger
 * table (wrangler's own statement), then each file of drizzle/sqlite/ in number order followed
 * by the ledger row it records for it. The database ends up as that command leaves it.
 */
function migrationsSql(): string {
  const files = readdirSync(MIGRATIONS_DIR).filter((f) => f.endsWith('.sql')).sort((a, b) => parseInt(a, 10) - parseInt(b, 10));
  const ledger = `CREATE TABLE IF NOT EXISTS ${MIGRATIONS_TABLE}(
\t\tid         INTEGER PRIMARY KEY AUTOINCREMENT,
\t\tname       TEXT UNIQUE,
\t\tapplied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL
);`;
  return [ledger, ...files.map((f) => `${readFileSync(join(MIGRATIONS_DIR, f), 'utf8')}\nINSERT INTO ${MIGRATIONS_TABLE} (name) values ('${f}');`)].join('\n');
}

/** An exported delivery as the row `podhook import` would write (D1 has no import command). */
function insertStatement(r: ExportRecord): string {
  const body = Buffer.from(r.body_base64, 'base64');
  const digest = createHash('sha256').update(`${r.signature_t}.`).update(body).digest('hex');
  const ms = (iso: string | null) => (iso === null ? 'NULL' : String(Date.parse(iso)));
  const text = (s: string | null) => (s === null ? 'NULL' : `'${s.replaceAll("'", "''")}'`);
  return `INSERT INTO deliveries (event_id, event_type, signature_t, content_digest, body, headers, received_at, last_received_at, delivery_count, status, attempts, last_error, next_attempt_at, processed_at) VALUES (${text(r.event_id)}, ${text(r.event_type)}, ${r.signature_t}, X'${digest}', X'${body.toString('hex')}', ${text(JSON.stringify(r.headers))}, ${ms(r.received_at)}, ${ms(r.last_received_at)}, ${r.delivery_count}, ${text(r.status)}, ${r.attempts}, ${text(r.last_error)}, ${ms(r.next_attempt_at)}, ${ms(r.processed_at)});`;
}
