// A sensitive step's result is shown nowhere: a real `podhook serve` (spawned, handlers in their
// threads, STEP_ENCRYPTION_KEY set) mints a secret in a sensitive step and gets it back on a retry;
// then every answer an operator can ask for, the CLI's listings and export, the server's log and
// the database file are searched for the secret's bytes.
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { STEPS_AFTER_REGISTRY } from '../fixtures/registry-paths.js';
import { signDelivery, TEST_SECRET } from '../helpers/sign.js';
import { runCli, spawnServer, type ServerProcess } from '../helpers/spawn-podhook.js';
import { TEST_STEP_KEY } from '../helpers/steps-runtime.js';
import { dbIn, useTempDir } from '../helpers/temp-dir.js';

const TOKEN = 'adm_sealed_0123456789abcdef0123456789';
const tempDir = useTempDir();
const servers: ServerProcess[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.child.kill('SIGTERM');
    if (s.child.exitCode === null) await once(s.child, 'close');
  }
});

/** The database file and its WAL and shared-memory files, as bytes. */
const databaseBytes = (path: string) => [path, `${path}-wal`, `${path}-shm`].filter(existsSync).map((f) => ({ file: f, bytes: readFileSync(f) }));

describe('a sensitive step', () => {
  it('leaves its plaintext in no admin answer, inspector page, podhook deliveries or export output, log line or byte of the database', { timeout: 60_000 }, async () => {
    const secret = `pk_live_${randomUUID().replaceAll('-', '')}`;
    const path = dbIn(tempDir());
    const env = { DATABASE_PATH: path, SVC_WEBHOOK_SECRET: TEST_SECRET, ADMIN_TOKEN: TOKEN, STEP_ENCRYPTION_KEY: TEST_STEP_KEY, RETRY_BASE_MS: '20', LOG_LEVEL: 'debug' };
    const server = await spawnServer({ ...env, MINT_SECRET: secret, HANDLER_THREADS: '1' }, { handlers: STEPS_AFTER_REGISTRY });
    servers.push(server);
    const d = signDelivery({ eventType: 'pod.created', t: Math.floor(Date.now() / 1000) });
    expect((await fetch(`${server.url}/webhooks`, { method: 'POST', headers: d.headers, body: d.body })).status).toBe(200);

    const auth = { authorization: `Bearer ${TOKEN}` };
    const get = async (path: string) => {
      const res = await fetch(`${server.url}/_podhook${path}`, { headers: auth });
      expect(res.status, path).toBe(200);
      return res.text();
    };
    // Minted, then "store in vault" failed once: its retry got the sealed result back, opened, and parked.
    await vi.waitFor(async () => expect(JSON.parse(await get(`/api/deliveries/${d.eventId}`)).runs.at(-1).parked).toMatchObject({ step: 'rotate' }), {
      timeout: 15_000,
      interval: 50,
    });
    const record = JSON.parse(await get(`/api/deliveries/${d.eventId}`));
    expect(record.runs.at(-1).steps.map((s: { name: string; state: string; attempts: number; sealed: boolean }) => [s.name, s.state, s.attempts, s.sealed])).toEqual([
      ['mint', 'done', 1, true],
      ['store in vault', 'done', 2, false],
      ['rotate', 'sleeping', 1, false],
    ]);
    // What "store in vault" recorded was computed from the opened secret: its length.
    expect(record.runs.at(-1).steps[1].result_bytes).toBe(JSON.stringify({ v: { stored: secret.length } }).length);

    const outputs: Record<string, string> = {
      'GET /api/deliveries': await get('/api/deliveries'),
      'GET /api/deliveries/:id': await get(`/api/deliveries/${d.eventId}`),
      'GET /api/export': await get('/api/export'),
      'GET /api/stats': await get('/api/stats'),
      'GET / (inspector)': await get('/'),
      'GET /deliveries/:id (inspector)': await get(`/deliveries/${d.eventId}`),
    };
    const cliEnv = { DATABASE_PATH: path, STEP_ENCRYPTION_KEY: TEST_STEP_KEY };
    for (const args of [['deliveries'], ['deliveries', '--json'], ['export']]) {
      const run = await runCli(args, cliEnv);
      expect(run.code, run.stderr).toBe(0);
      outputs[`podhook ${args.join(' ')}`] = run.stdout + run.stderr;
    }
    // They did show the delivery, parked (the searches below read real answers).
    expect(outputs['podhook deliveries']).toMatch(new RegExp(`${d.eventId}\\s+pod\\.created\\s+parked`));
    expect(JSON.parse(outputs['podhook deliveries --json']!)[0].parked).toMatchObject({ handler: 'mintKey', step: 'rotate' });
    expect(outputs['GET /deliveries/:id (inspector)']).toContain('>sealed</td>');
    expect(outputs['podhook export']).toContain(d.eventId);
    outputs['server log'] = server.output();
    expect(outputs['server log']).toContain('handler run');

    for (const [where, text] of Object.entries(outputs)) expect(text.includes(secret), `the secret in ${where}`).toBe(false);
    const files = databaseBytes(path);
    // The step rows are in these bytes (sealed), so the search below reads what was written.
    expect(files.some((f) => f.bytes.includes('sealed:v1:'))).toBe(true);
    for (const f of files) expect(f.bytes.includes(secret), `the secret in ${f.file}`).toBe(false);

    // Once stopped (the WAL checkpointed into the file), still nowhere.
    const stopped = servers.pop()!;
    stopped.child.kill('SIGTERM');
    if (stopped.child.exitCode === null) await once(stopped.child, 'close');
    for (const f of databaseBytes(path)) expect(f.bytes.includes(secret), `the secret in ${f.file} after shutdown`).toBe(false);
    expect(stopped.output().includes(secret)).toBe(false);
  });
});
