// A handler's error that quotes a secret (the signing secret from the environment, one stored with
// `podhook secrets add` while the server runs, the compute API key stored with `podhook secrets
// add --api-key` while it runs, the admin and metrics tokens): on a real
// `podhook serve` (SQLite file on disk, HTTP on 127.0.0.1) the text is redacted wherever it is
// recorded or shown. One test per surface: log lines, the database file, the admin API, the CLI.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { parseConfig } from '../../src/core/config.js';
import { startServer, type RunningServer } from '../../src/node/serve.js';
import { handlers } from '../fixtures/leaky-handlers.js';
import { LEAKY_REGISTRY } from '../fixtures/registry-paths.js';
import { startAlertReceiver, type AlertReceiver } from '../helpers/alert-receiver.js';
import { captureLogger } from '../helpers/capture-logger.js';
import { signDelivery } from '../helpers/sign.js';
import { dbIn } from '../helpers/temp-dir.js';
import { runMain } from '../cli/run-main.js';

const ENV_SECRET = 'whsec_env_7d1c9a3f5b2e4086aa';
const STORED_SECRET = 'whsec_stored_3e8b1f6a9c2d4071bb';
const ADMIN_TOKEN = 'adm_2f9e4c7a1b8d3065cc0123456789abcd';
const METRICS_TOKEN = 'met_5a1c8e3f7b2d9046';
const STORED_API_KEY = 'svc_live_stored_api_key_8c4e2a7f1d9b';
const SECRETS = [ENV_SECRET, STORED_SECRET, STORED_API_KEY, ADMIN_TOKEN, METRICS_TOKEN];
(globalThis as Record<string, unknown>).__leakySecrets = SECRETS;

const leaksIn = (text: string) => SECRETS.filter((s) => text.includes(s) || text.includes(encodeURIComponent(s)));

describe("a secret in a handler's error", () => {
  let dir: string;
  let path: string;
  let env: Record<string, string>;
  let server: RunningServer;
  let alerts: AlertReceiver;
  const log = captureLogger();
  const ids: string[] = [];

  beforeAll(async () => {
    // One folder for the whole file: each test reads what the same run left.
    dir = mkdtempSync(join(tmpdir(), 'podhook-redaction-'));
    path = dbIn(dir);
    alerts = await startAlertReceiver();
    env = { DATABASE_PATH: path, SVC_WEBHOOK_SECRET: ENV_SECRET, ADMIN_TOKEN, METRICS_TOKEN, DISPATCH_MAX_ATTEMPTS: '1', ALERT_WEBHOOK_URL: alerts.url };
    server = await startServer({ config: parseConfig({ ...env, PORT: '0', HOST: '127.0.0.1' }), logger: log.logger, handlers });
    // Stored while the server runs, as an operator rotating the secret does.
    const added = await runMain(['secrets', 'add'], { DATABASE_PATH: path }, { stdin: `${STORED_SECRET}\n` });
    expect(added.code, added.stderr).toBe(0);
    const addedKey = await runMain(['secrets', 'add', '--api-key'], { DATABASE_PATH: path }, { stdin: `${STORED_API_KEY}\n` });
    expect(addedKey.code, addedKey.stderr).toBe(0);
    for (const secret of [ENV_SECRET, STORED_SECRET]) {
      const d = signDelivery({ t: Math.floor(Date.now() / 1000), eventType: 'pod.created', secret });
      const res = await fetch(`${server.url}/webhooks`, { method: 'POST', headers: d.headers, body: d.body });
      expect(res.status).toBe(200);
      ids.push(d.eventId);
    }
    await vi.waitFor(async () => {
      for (const id of ids) expect((await server.runtime.store.get(id))?.status).toBe('dead');
    }, { timeout: 10_000 });
    await vi.waitFor(() => expect(alerts.alerts().filter((a) => a.podhook.kind === 'dead_letter')).toHaveLength(1), { timeout: 10_000 });
  }, 60_000);
  afterAll(async () => {
    await server?.close(100);
    await alerts?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("is redacted in the 'handler run' and 'delivery dead' log lines", () => {
    const lines = log.records().filter((r) => r.msg === 'handler run' || r.msg === 'delivery dead');
    expect(lines.map((r) => r.msg).sort()).toEqual(['delivery dead', 'delivery dead', 'handler run', 'handler run']);
    for (const line of lines) expect(JSON.stringify(line)).toContain('[redacted]');
    expect(leaksIn(log.text())).toEqual([]);
  });

  it('is redacted in last_error and the run history, and appears nowhere in the database file', async () => {
    const db = new Database(path, { readonly: true });
    try {
      const rows = db.prepare('select last_error from deliveries').all() as { last_error: string }[];
      const ledger = db.prepare('select last_error from handler_runs').all() as { last_error: string }[];
      const history = db.prepare('select error as last_error from handler_attempts').all() as { last_error: string }[];
      expect([rows.length, ledger.length, history.length]).toEqual([2, 2, 2]);
      for (const r of [...rows, ...ledger, ...history]) {
        expect(r.last_error).toContain('[redacted]');
        expect(leaksIn(r.last_error)).toEqual([]);
      }
    } finally {
      db.close();
    }
    // The file and its WAL: the stored secret is in the secrets table and the API key in api_keys
    // (their places); no other secret is anywhere.
    const files = readdirSync(dirname(path)).filter((f) => f.startsWith(path.split('/').pop()!));
    const bytes = files.map((f) => readFileSync(join(dirname(path), f)).toString('latin1')).join('');
    expect(leaksIn(bytes).filter((s) => s !== STORED_SECRET && s !== STORED_API_KEY)).toEqual([]);
  });

  it('is redacted in the admin API: the list, the delivery and its runs', async () => {
    const get = async (p: string) => (await fetch(`${server.url}/_podhook/api${p}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).text();
    const answers = [await get('/deliveries'), ...(await Promise.all(ids.map((id) => get(`/deliveries/${id}`))))];
    for (const answer of answers) expect(answer).toContain('[redacted]');
    expect(leaksIn(answers.join('\n'))).toEqual([]);
  });

  it('is redacted in the dead-letter alert', () => {
    const text = alerts.raw.join('\n');
    expect(text).toContain('[redacted]');
    expect(leaksIn(text)).toEqual([]);
  });

  it('is redacted in the CLI: podhook deliveries --json, and what podhook replay prints and logs', async () => {
    const listed = await runMain(['deliveries', '--json'], { DATABASE_PATH: path });
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain('[redacted]');
    const replayed = await runMain(['replay', ...ids, '--handlers', LEAKY_REGISTRY], { ...env, LOG_LEVEL: 'info' });
    expect(replayed.code).toBe(1);
    expect(replayed.stdout).toContain('[redacted]');
    expect(leaksIn(listed.stdout + listed.stderr + replayed.stdout + replayed.stderr)).toEqual([]);
  });
});
