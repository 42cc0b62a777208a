// The compute API key's bytes, followed everywhere podhook could leave them: CLI output, the
// server's log lines, admin answers, an export, every database row but its own, and (when it
// comes from SVC_API_KEY) the SQLite files themselves. A key stored with `secrets add --api-key`
// is never accepted as a webhook signing secret.
import Database from 'better-sqlite3';
import { existsSync, readFileSync } from 'node:fs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { parseConfig } from '../../src/core/config.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/start-emulator.js';
import { startServer, type RunningServer } from '../../src/node/serve.js';
import { handlers } from '../fixtures/recording-handlers.js';
import { captureLogger } from '../helpers/capture-logger.js';
import { signDelivery } from '../helpers/sign.js';
import { LEAKY_REGISTRY } from '../fixtures/registry-paths.js';
import { runCli, spawnServer } from '../helpers/spawn-podhook.js';
import { dbIn, useTempDir } from '../helpers/temp-dir.js';
import { runMain } from './run-main.js';

const ADMIN = 'adm_secrecy_0123456789abcdef0123456789';
const SIGNING = 'whsec_secrecy_signing_5d0c2a91';
const NAMED_REGISTRY = new URL('../fixtures/registries/order-by-pod-named.ts', import.meta.url).pathname;
const tempDir = useTempDir();
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** Every row of every table but `api_keys`, as text. */
function rowsOutsideApiKeys(path: string): string {
  const db = new Database(path, { readonly: true });
  try {
    const tables = db.prepare("select name from sqlite_master where type = 'table' and name != 'api_keys'").all() as { name: string }[];
    return tables.map(({ name }) => JSON.stringify(db.prepare(`select * from "${name}"`).all(), (_k, v: unknown) => (Buffer.isBuffer(v) ? v.toString('latin1') : v))).join('\n');
  } finally {
    db.close();
  }
}

/** The emulator, a receiver on the same database with the admin API, and what each printed or logged. */
async function world(key: string, db: string, fromEnv: boolean) {
  const emu = await startEmulator({ apiKey: key, seedPods: 2 });
  cleanups.push(() => emu.close());
  const log = captureLogger();
  const config = parseConfig({
    DATABASE_PATH: db,
    SVC_WEBHOOK_SECRET: SIGNING,
    PORT: '0',
    HOST: '127.0.0.1',
    ADMIN_TOKEN: ADMIN,
    SVC_BASE_URL: emu.url,
    ...(fromEnv && { SVC_API_KEY: key }),
    LOG_LEVEL: 'trace',
  });
  const server = await startServer({ config, logger: log.logger, handlers, payloads: { orderFields: { podId: 'pod.id', occurredAt: null } } });
  cleanups.push(() => server.close(100));
  return { emu, server, log };
}

/** Everything the receiver and the CLI do with the key in play; resolves with all they showed. */
async function exercise(emu: RunningEmulator, server: RunningServer, key: string, env: Record<string, string>) {
  const shown: string[] = [];
  const admin = (path: string) => fetch(`${server.url}/_podhook/api${path}`, { headers: { authorization: `Bearer ${ADMIN}` } });
  // A delivery for a listed pod, signed with the real signing secret.
  const pod = emu.emulator.pods.all()[0]!.id;
  const d = signDelivery({ t: Math.floor(Date.now() / 1000), body: { pod: { id: pod } }, secret: SIGNING });
  expect((await fetch(`${server.url}/webhooks`, { method: 'POST', headers: d.headers, body: d.body })).status).toBe(200);
  // One signed with the API key as its secret is refused: the key is no signing secret.
  const forged = signDelivery({ t: Math.floor(Date.now() / 1000), secret: key });
  const refused = await fetch(`${server.url}/webhooks`, { method: 'POST', headers: forged.headers, body: forged.body });
  expect(refused.status).toBe(401);
  shown.push(await refused.text());

  const report = await admin('/pods?drift=true');
  expect(report.status).toBe(200);
  const body = (await report.json()) as { listed: number; drift: { unknown_to_podhook: number } };
  expect(body).toMatchObject({ listed: 2, drift: { unknown_to_podhook: 1 } });
  shown.push(JSON.stringify(body));
  emu.emulator.injectFault({ count: 1, status: 403, code: 'forbidden', message: 'This key may not list pods.' });
  const failed = await admin('/pods');
  expect(failed.status).toBe(502);
  shown.push(await failed.text());
  for (const path of ['/deliveries', '/stats', '/export']) {
    const res = await admin(path);
    expect(res.status, path).toBe(200);
    shown.push(await res.text());
  }

  const cli = [
    await runCli(['pods', '--handlers', NAMED_REGISTRY], env),
    await runMain(['pods', '--drift', '--json', '--handlers', NAMED_REGISTRY], env),
    await runMain(['secrets', 'list'], env),
    await runMain(['secrets', 'list', '--json'], env),
    await runMain(['export'], env),
    await runMain(['deliveries', '--json'], env),
  ];
  expect(cli.map((r) => r.code)).toEqual([0, 3, 0, 0, 0, 0]);
  for (const r of cli) shown.push(r.stdout, r.stderr);
  return shown.join('\n');
}

describe('the compute API key', () => {
  it('stored with `secrets add --api-key`: in no output, log line, admin answer, export or row but its own, and never a signing secret', async () => {
    const key = `svc_live_${crypto.randomUUID().replace(/-/g, '')}`;
    const db = dbIn(tempDir());
    const env = { DATABASE_PATH: db };
    const added = await runCli(['secrets', 'add', '--api-key'], env, `${key}\n`);
    expect(added.code, added.stderr).toBe(0);
    expect(added.stdout).toMatch(/^API key stored: fingerprint [0-9a-f]{12}\. It is sent only as X-API-Key\.\n$/);
    // Given as a signing secret, it is refused; a signing secret given as the key, too.
    const asSigning = await runMain(['secrets', 'add'], env, { stdin: key });
    expect(asSigning.code).toBe(2);
    expect(asSigning.stderr).toContain('this is the compute API key, not a webhook signing secret');
    expect((await runMain(['secrets', 'add'], env, { stdin: SIGNING })).code).toBe(0);
    const swapped = await runMain(['secrets', 'add', '--api-key'], env, { stdin: SIGNING });
    expect(swapped.code).toBe(2);
    expect(swapped.stderr).toContain('this is a webhook signing secret, not a compute API key');

    const { emu, server, log } = await world(key, db, false);
    const shown = await exercise(emu, server, key, { ...env, SVC_BASE_URL: emu.url });
    const listed = await runMain(['secrets', 'list'], env);
    expect(listed.stdout).toMatch(/API key \(not a signing secret\): stored, fingerprint [0-9a-f]{12}/);
    for (const [where, text] of [['output and answers', shown + added.stdout + added.stderr + asSigning.stderr + listed.stdout], ['log lines', log.text()]] as const) {
      expect(text, where).not.toContain(key);
    }
    expect(log.lines.length).toBeGreaterThan(3);
    await server.close(100);
    expect(rowsOutsideApiKeys(db)).not.toContain(key);
    const own = new Database(db, { readonly: true });
    expect(own.prepare('select secret from api_keys').all()).toEqual([{ secret: key }]);
    own.close();
    expect((await runMain(['secrets', 'remove', '--api-key'], env)).stdout).toBe('API key removed.\n');
  }, 90_000);

  it('from SVC_API_KEY: its bytes are nowhere in the SQLite files, the logs or the output', async () => {
    const key = `svc_live_${crypto.randomUUID().replace(/-/g, '')}`;
    const db = dbIn(tempDir());
    const { emu, server, log } = await world(key, db, true);
    const shown = await exercise(emu, server, key, { DATABASE_PATH: db, SVC_BASE_URL: emu.url, SVC_API_KEY: key });
    expect(shown).not.toContain(key);
    expect(log.text()).not.toContain(key);
    await server.close(100);
    const bytes = Buffer.from(key);
    const files = [db, `${db}-wal`, `${db}-shm`].filter((f) => existsSync(f));
    expect(files.length).toBeGreaterThan(0);
    for (const file of files) expect(readFileSync(file).includes(bytes), file).toBe(false);
  }, 90_000);

  it("stored while no delivery arrives: a retry that `podhook serve` runs at start (a handler thread) quotes it in its error, and it is redacted everywhere", async () => {
    const key = `svc_live_${crypto.randomUUID().replace(/-/g, '')}`;
    const db = dbIn(tempDir());
    const env = { DATABASE_PATH: db, SVC_WEBHOOK_SECRET: SIGNING, ADMIN_TOKEN: ADMIN, HANDLER_THREADS: '1', DISPATCH_POLL_MS: '100', DISPATCH_MAX_ATTEMPTS: '2', RETRY_BASE_MS: '1000', RETRY_MAX_MS: '1000' };
    // A first run fails (its error quotes nothing yet), and its retry is due in a second.
    const first = await spawnServer(env, { handlers: LEAKY_REGISTRY });
    cleanups.push(() => void first.child.kill('SIGKILL'));
    const d = signDelivery({ t: Math.floor(Date.now() / 1000), eventType: 'pod.created', secret: SIGNING });
    expect((await fetch(`${first.url}/webhooks`, { method: 'POST', headers: d.headers, body: d.body })).status).toBe(200);
    const row = () => {
      const conn = new Database(db, { readonly: true });
      try {
        return conn.prepare('select status, attempts from deliveries where event_id = ?').get(d.eventId);
      } finally {
        conn.close();
      }
    };
    await vi.waitFor(() => expect(row()).toEqual({ status: 'failed', attempts: 1 }), { timeout: 10_000, interval: 50 });
    first.child.kill('SIGKILL');
    // The key stored while no receiver runs; the next one's handler quotes it, and no delivery
    // arrives to make it read the stored secrets: the retry alone runs.
    expect((await runCli(['secrets', 'add', '--api-key'], { DATABASE_PATH: db }, `${key}\n`)).code).toBe(0);
    const second = await spawnServer({ ...env, LEAKY_SECRETS: key }, { handlers: LEAKY_REGISTRY });
    cleanups.push(() => void second.child.kill('SIGKILL'));
    await vi.waitFor(() => expect(row()).toEqual({ status: 'dead', attempts: 2 }), { timeout: 15_000, interval: 50 });
    await vi.waitFor(() => expect(second.output()).toContain('"msg":"delivery dead"'), { timeout: 5_000, interval: 50 });
    const answer = await (await fetch(`${second.url}/_podhook/api/deliveries/${d.eventId}`, { headers: { authorization: `Bearer ${ADMIN}` } })).text();
    expect(answer).toContain('[redacted]');
    expect(second.output()).toContain('[redacted]');
    expect(answer + second.output() + first.output()).not.toContain(key);
    expect(rowsOutsideApiKeys(db)).not.toContain(key);
  }, 60_000);
});
