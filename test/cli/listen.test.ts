// `podhook listen`'s refusals and options against a spawned Node `podhook serve`: a wrong token
// (401), plain http to another machine, a failing local handler, --types and --handler. The token
// never appears in any output, ours or the remote's.
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { AppendedCall } from '../fixtures/appending-handlers.js';
import { ADMIN_TOKEN, startNodeRemote, type RemotePodhook } from '../helpers/remote-podhook.js';
import { signDelivery } from '../helpers/sign.js';
import { runCli, spawnServer, type ServerProcess } from '../helpers/spawn-podhook.js';
import { useTempDir } from '../helpers/temp-dir.js';
import { HANDLERS } from './listen-scenario.js';

const tempDir = useTempDir('podhook-listen-');
let remote: RemotePodhook;
/** A `podhook serve` without ADMIN_TOKEN, so without the admin API (the 404 test's remote). */
let bare: ServerProcess;
let remoteDir: string;
const delivered: Array<{ id: string; type: string }> = [];

beforeAll(async () => {
  remoteDir = mkdtempSync(join(tmpdir(), 'podhook-listen-remote-'));
  // Both remotes only ever answer reads here: started once for the file, side by side.
  [remote, bare] = await Promise.all([
    startNodeRemote(remoteDir, []),
    spawnServer({ DATABASE_PATH: join(remoteDir, 'bare.db'), SVC_WEBHOOK_SECRET: 'whsec_x', DISPATCHER: 'off' }),
  ]);
  for (const type of ['pod.created', 'pod.backup.failed', 'pod.destroyed']) {
    const d = signDelivery({ t: Math.floor(Date.now() / 1000), eventType: type });
    const res = await fetch(`${remote.url}/webhooks`, { method: 'POST', headers: d.headers, body: d.body });
    expect(res.status).toBe(200);
    delivered.push({ id: d.eventId, type });
  }
}, 30_000);
afterAll(async () => {
  if (bare && bare.child.exitCode === null) {
    bare.child.kill('SIGTERM');
    await once(bare.child, 'close');
  }
  await remote?.close();
  rmSync(remoteDir, { recursive: true, force: true });
});

function local(extra: Record<string, string> = {}) {
  const dir = tempDir();
  const env = { DATABASE_PATH: join(dir, 'local.db'), PODHOOK_ADMIN_TOKEN: ADMIN_TOKEN, RECORD_FILE: join(dir, 'calls.jsonl'), LOG_LEVEL: 'warn', ...extra };
  return {
    env,
    listen: (args: string[], from = remote.url) => runCli(['listen', '--from', from, '--handlers', HANDLERS, ...args], env),
    calls: (): AppendedCall[] => (existsSync(env.RECORD_FILE) ? readFileSync(env.RECORD_FILE, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as AppendedCall) : []),
    async rows() {
      if (!existsSync(env.DATABASE_PATH)) return [];
      const { store, close } = openSqliteStore(env.DATABASE_PATH);
      try {
        return await store.scan({ limit: 100 });
      } finally {
        close();
      }
    },
  };
}

describe('podhook listen: refusals', () => {
  it('a token the remote refuses (401) stops at once with exit 3, stores nothing, and no output carries a token', async () => {
    const wrong = 'adm_wrong_token_0123456789abcdef0123456789';
    const l = local({ PODHOOK_ADMIN_TOKEN: wrong });
    // The same with the token on the command line (below), run alongside, into a database of its own.
    const [r, flag] = await Promise.all([
      l.listen(['--since', '1h']),
      runCli(['listen', '--from', remote.url, '--token', wrong, '--once'], { DATABASE_PATH: join(tempDir(), 'flag.db') }),
    ]);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain(`${remote.url} refused the admin token (401)`);
    expect(r.stdout).toBe('');
    expect(await l.rows()).toEqual([]);
    for (const text of [r.stdout, r.stderr, remote.output()]) {
      expect(text).not.toContain(wrong);
      expect(text).not.toContain(ADMIN_TOKEN);
    }
    // The token on the command line: still never echoed.
    expect(flag.code).toBe(3);
    expect(flag.stdout + flag.stderr).not.toContain(wrong);
  });

  it.each([
    ['http://hooks.example.com', 'http:// to another machine'],
    ['http://10.0.0.7:3000', 'http:// to a private address'],
    ['http://[fe80::1]/', 'http:// to a link-local address'],
  ])('refuses --from %s (%s) with exit 2 before sending anything', async (from) => {
    const l = local();
    const r = await l.listen(['--once'], from);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--from must be https:\/\/ \(http:\/\/ only to 127\.0\.0\.1, ::1 or localhost\)/);
    expect(r.stdout + r.stderr).not.toContain(ADMIN_TOKEN);
    expect(existsSync(l.env.DATABASE_PATH)).toBe(false);
  });

  it('refuses credentials in --from and a missing token with exit 2', async () => {
    const l = local({ PODHOOK_ADMIN_TOKEN: '' });
    // Both refused before anything is opened or sent: run side by side.
    const [creds, none] = await Promise.all([l.listen(['--once'], `http://user:${ADMIN_TOKEN}@127.0.0.1:9/`), l.listen(['--once'])]);
    expect(creds.code).toBe(2);
    expect(creds.stderr).toContain('--from must not carry credentials');
    expect(creds.stderr).not.toContain(ADMIN_TOKEN);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('set PODHOOK_ADMIN_TOKEN (or --token)');
  });

  it('a remote without the admin API (404) stops with exit 1 and says why', async () => {
    const l = local();
    const r = await l.listen(['--once'], bare.url);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('answered 404 to the export: no admin API there: set ADMIN_TOKEN');
  });
});

describe('podhook listen: options', () => {
  it('--once exits 1 when a local handler fails; the delivery stays here as failed, to be retried', async () => {
    const l = local({ FAIL_TYPES: 'pod.destroyed' });
    const r = await l.listen(['--once', '--since', '1h']);
    expect(r.code).toBe(1);
    const deleted = delivered.find((d) => d.type === 'pod.destroyed')!;
    expect(r.stdout).toMatch(new RegExp(`${deleted.id}  FAILED at attempt 1, will retry: appendAll: .*appendAll refuses pod\\.destroyed`));
    const rows = await l.rows();
    expect(rows.find((d) => d.eventId === deleted.id)).toMatchObject({ status: 'failed', attempts: 1 });
    expect(rows.filter((d) => d.status === 'processed')).toHaveLength(2);
  });

  it('--types stores only the deliveries of those types; --handler runs only that handler', async () => {
    const l = local();
    const r = await l.listen(['--once', '--since', '1h', '--types', 'pod.backup.*,pod.destroyed', '--handler', 'appendBackups']);
    expect(r.code, r.stderr).toBe(0);
    const rows = await l.rows();
    expect(rows.map((d) => d.eventType).sort()).toEqual(['pod.backup.failed', 'pod.destroyed']);
    expect(rows.find((d) => d.eventType === 'pod.destroyed')).toMatchObject({ status: 'ignored' });
    expect(l.calls().map((c) => `${c.handler} ${c.type}`)).toEqual(['appendBackups pod.backup.failed']);
    expect(r.stdout).toMatch(/pod\.destroyed\s+\S+  ignored: no local handler takes this type/);
  });

  // Five `podhook listen` processes: beside a second suite each took about 4 s one after another.
  // The three usage errors stop before the database is opened, so they run beside the two others.
  it('--since in the future of every delivery stores nothing, and a later --since does not apply; a bad --since or --types is a usage error', { timeout: 60_000 }, async () => {
    const l = local();
    const usage = Promise.all([
      l.listen(['--once', '--since', 'yesterday']),
      l.listen(['--once', '--types', 'pod.nothing']),
      l.listen(['--once', '--handler', 'nobody']),
    ]);
    const none = await l.listen(['--once', '--since', new Date(Date.now() + 60_000).toISOString()]);
    expect(none.code).toBe(0);
    expect(await l.rows()).toEqual([]);
    // That start is this database's position for the remote now: a later --since does not apply.
    const again = await l.listen(['--once', '--since', '1h']);
    expect(again.code).toBe(0);
    expect(again.stderr).toContain('resuming after the last delivery seen from this remote (--since applies only the first time)');
    expect(await l.rows()).toEqual([]);
    const [badSince, badTypes, badHandler] = await usage;
    expect(badSince.code).toBe(2);
    expect(badTypes.code).toBe(2);
    expect(badHandler.code).toBe(2);
  });
});
