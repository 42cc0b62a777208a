// One runner, two ways to run it: the same deliveries sent to `podhook serve` with handlers in
// threads (HANDLER_THREADS=1, the default here) and in the receiver's thread (HANDLER_THREADS=0)
// end the same way, and leave no secret behind in either: not in a step's error, a handler's log
// line at any depth, a stray error, the database, the admin API or /metrics. A handler thread is
// not given the receiver's secrets at all, and a looping handler beside a calm one on the same
// event type fails alone.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { MAX_HANDLER_LINE_CHARS } from '../../src/core/runner/handler-log.js';
import { PARITY_REGISTRY } from '../fixtures/registry-paths.js';
import { signDelivery } from '../helpers/sign.js';
import { spawnServer, type ServerProcess } from '../helpers/spawn-podhook.js';
import { TEST_STEP_KEY } from '../helpers/steps-runtime.js';
import { dbIn } from '../helpers/temp-dir.js';

const SIGNING = 'whsec_parity_5c2e9a7b1d3f4068';
const ADMIN_TOKEN = 'adm_parity_4b7e1c9a2f5d8036aa0123456789ab';
const METRICS_TOKEN = 'met_parity_8d3a6f1c';
const API_KEY = 'svc_live_parity_api_key_9f2c7a4e1b6d';
const SECRETS = [SIGNING, ADMIN_TOKEN, METRICS_TOKEN, API_KEY, TEST_STEP_KEY];
const leaksIn = (text: string) => SECRETS.filter((s) => text.includes(s) || text.includes(encodeURIComponent(s)));

/** Folders for the whole file: its servers outlive each test. */
const dirs: string[] = [];
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'podhook-parity-'));
  dirs.push(dir);
  return dir;
};
afterAll(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
const nowS = () => Math.floor(Date.now() / 1000);
let sent = 0;

interface Mode {
  server: ServerProcess;
  path: string;
  record: string;
  send(eventType: string, body?: unknown): Promise<string>;
  /** The delivery once it is no longer queued: status, last error, and its handlers' ledger rows. */
  settled(id: string): Promise<{ status: string; lastError: string | null; runs: { handler: string; status: string }[] }>;
  admin(path: string): Promise<string>;
}

async function start(threads: number): Promise<Mode> {
  const dir = tempDir();
  const path = dbIn(dir);
  const record = join(dir, 'record.jsonl');
  const server = await spawnServer(
    {
      HANDLER_THREADS: String(threads),
      DATABASE_PATH: path,
      SVC_WEBHOOK_SECRET: SIGNING,
      ADMIN_TOKEN,
      METRICS_TOKEN,
      SVC_API_KEY: API_KEY,
      STEP_ENCRYPTION_KEY: TEST_STEP_KEY,
      DISPATCH_MAX_ATTEMPTS: '1',
      DISPATCH_POLL_MS: '100',
      FIXTURE_SECRETS: SECRETS.join(','),
      TEAM_VARIABLE: 'team-value',
      RECORD_FILE: record,
    },
    { handlers: PARITY_REGISTRY },
  );
  const db = new Database(path, { readonly: true });
  return {
    server,
    path,
    record,
    async send(eventType, body = {}) {
      // Each body its own: the same signed content twice would be a replay (quarantined).
      const unique = Array.isArray(body) ? [...body, ++sent] : { ...(body as object), n: ++sent };
      const d = signDelivery({ t: nowS(), eventType, body: unique as Record<string, unknown>, secret: SIGNING });
      const res = await fetch(`${server.url}/webhooks`, { method: 'POST', headers: d.headers, body: d.body });
      expect(res.status).toBe(200);
      return d.eventId;
    },
    async settled(id) {
      let row: { status: string; last_error: string | null } | undefined;
      await vi.waitFor(() => {
        row = db.prepare('select status, last_error from deliveries where event_id = ?').get(id) as typeof row;
        expect(row?.status).not.toBe('queued');
      }, { timeout: 20_000, interval: 50 });
      const runs = db.prepare('select handler, status from handler_runs where event_id = ? order by handler').all(id) as { handler: string; status: string }[];
      return { status: row!.status, lastError: row!.last_error, runs };
    },
    async admin(p) {
      return (await fetch(`${server.url}${p}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).text();
    },
  };
}

/** The same outcome whatever the event id: ids written as <id>. */
const general = (o: Awaited<ReturnType<Mode['settled']>>, id: string) => ({ ...o, lastError: o.lastError?.replaceAll(id, '<id>') ?? null });

/**
 * The file's servers, kept for all its tests (each test sends deliveries of its own): handlers in
 * one thread and in the receiver's thread, and in two threads, started while the first tests run.
 */
const modes: Record<'threads' | 'inThread', Mode> = {} as never;
let twoThreads: Promise<Mode> | undefined;
beforeAll(async () => {
  [modes.threads, modes.inThread] = await Promise.all([start(1), start(0)]);
  twoThreads = start(2);
  twoThreads.catch(() => {}); // awaited (and its failure reported) by the test that takes it
}, 60_000);
afterAll(async () => {
  for (const m of Object.values(modes)) m.server.child.kill('SIGKILL');
  (await twoThreads?.catch(() => undefined))?.server.child.kill('SIGKILL');
});

describe('one runner: the same deliveries with handlers in threads and in the receiver thread', () => {
  const both = async (eventType: string, body?: unknown) => {
    const ids = await Promise.all([modes.threads.send(eventType, body), modes.inThread.send(eventType, body)]);
    const [a, b] = await Promise.all([modes.threads.settled(ids[0]), modes.inThread.settled(ids[1])]);
    return { threads: general(a, ids[0]), inThread: general(b, ids[1]), ids };
  };

  it('a payload its handler\'s schema refuses: dead, the same error', async () => {
    const { threads, inThread } = await both('pod.created', {});
    expect(threads).toEqual(inThread);
    expect(threads.status).toBe('dead');
    expect(threads.lastError).toMatch(/^strict: invalid_payload: pod_id: /);
  });

  it('a body that is no JSON object (its schema says so): dead, the same error', async () => {
    const { threads, inThread } = await both('pod.created', [1, 2]);
    expect(threads).toEqual(inThread);
    expect(threads).toMatchObject({ status: 'dead', lastError: 'strict: invalid_payload: (root): Invalid input: expected object, received array' });
  });

  it('a thrown error quoting secrets: failed the same way, redacted', async () => {
    const { threads, inThread } = await both('pod.backup.failed');
    expect(threads).toEqual(inThread);
    expect(threads.status).toBe('dead');
    expect(threads.lastError).toBe(`thrower: Error: upstream refused: ${SECRETS.map(() => '[redacted]').join(' ')}`);
  });

  it('a promise left to reject as the handler returned: its run fails, the same way', async () => {
    const { threads, inThread } = await both('pod.renewed');
    expect(threads).toEqual(inThread);
    expect(threads).toMatchObject({ status: 'dead', lastError: 'leaver: Error: left behind by <id>' });
    // Log lines reach stdout within 100 ms of being written.
    for (const m of Object.values(modes)) await vi.waitFor(() => expect(m.server.output()).toContain('handler left an error behind: its run failed'), { timeout: 5_000 });
  });

  it('a step that throws secrets: the step\'s own error is redacted in the database, the admin API, the inspector\'s page and the export', async () => {
    const { threads, inThread, ids } = await both('pod.expiring');
    expect(threads).toEqual(inThread);
    expect(threads.status).toBe('dead');
    for (const [m, id] of [[modes.threads, ids[0]], [modes.inThread, ids[1]]] as const) {
      const db = new Database(m.path, { readonly: true });
      const step = db.prepare('select error from handler_steps where event_id = ?').get(id) as { error: string };
      db.close();
      expect(step.error).toBe(`Error: step refused: ${SECRETS.map(() => '[redacted]').join(' ')}`);
      const answer = await m.admin(`/_podhook/api/deliveries/${id}`);
      expect(answer).toContain('step refused');
      expect(leaksIn(answer)).toEqual([]);
      const page = await m.admin(`/_podhook/deliveries/${id}`);
      expect(page).toContain('step refused');
      expect(leaksIn(page)).toEqual([]);
      const exported = await m.admin('/_podhook/api/export');
      expect(exported).toContain(id);
      expect(leaksIn(exported)).toEqual([]);
    }
  });

  it('log lines with what a thread cannot clone (functions, an AbortSignal, a cycle) and secrets at any depth: written, redacted, the run succeeds', async () => {
    const { threads, inThread, ids } = await both('pod.status.changed');
    expect(threads).toEqual(inThread);
    expect(threads).toMatchObject({ status: 'processed', lastError: null });
    for (const [m, id] of [[modes.threads, ids[0]], [modes.inThread, ids[1]]] as const) {
      await vi.waitFor(() => expect(m.server.output()).toContain('child line'), { timeout: 5_000 });
      const lines = m.server.output().split('\n').filter((l) => l.includes(id)).map((l) => JSON.parse(l) as Record<string, unknown>);
      const odd = lines.find((l) => l.msg === 'odd fields')!;
      expect(odd).toMatchObject({ fn: '[Function fn]', nested: { deeper: { fn: '[Function named]' } }, signal: '[AbortSignal]', circular: { name: 'loop', self: '[Circular]' }, handler: 'odd', event_id: id });
      const withSecrets = lines.find((l) => l.msg === 'message with [redacted]')!;
      expect(withSecrets).toMatchObject({ top: '[redacted]', nested: { list: ['[redacted]', { deep: ['[redacted]'] }] }, err: { type: 'Error', message: 'failed with [redacted]' } });
      expect(lines.find((l) => l.msg === 'child line')).toMatchObject({ bound: '[redacted]', level: 40 });
      expect(leaksIn(m.server.output())).toEqual([]);
    }
  });

  it(`a 50 MB string in a log line is cut to about ${MAX_HANDLER_LINE_CHARS} characters, marked, and the run succeeds`, async () => {
    const { threads, inThread, ids } = await both('pod.status.changed', { big_mb: 50 });
    expect(threads).toEqual(inThread);
    expect(threads.status).toBe('processed');
    for (const [m, id] of [[modes.threads, ids[0]], [modes.inThread, ids[1]]] as const) {
      await vi.waitFor(() => expect(m.server.output()).toContain('big line'), { timeout: 10_000 });
      const line = m.server.output().split('\n').find((l) => l.includes(id) && l.includes('big line'))!;
      expect(line.length).toBeLessThan(MAX_HANDLER_LINE_CHARS + 1_000);
      expect(JSON.parse(line).blob).toMatch(/…\[cut \d+ chars\]$/);
    }
  });

  it('nothing of the secrets on /metrics, in the database file or its WAL', async () => {
    for (const m of Object.values(modes)) {
      const metrics = await (await fetch(`${m.server.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
      expect(metrics).toContain('podhook_handler_runs_total');
      expect(leaksIn(metrics)).toEqual([]);
      const bytes = Buffer.concat([readFileSync(m.path), readFileSync(`${m.path}-wal`)]).toString('latin1');
      // The stored signing secret is not in this database (it came from the environment).
      expect(leaksIn(bytes)).toEqual([]);
    }
  });

  it('a handler thread gets the environment it needs, not the receiver\'s secrets', async () => {
    const id = await modes.threads.send('pod.active');
    await modes.threads.settled(id);
    const line = () => modes.threads.server.output().split('\n').find((l) => l.includes(id) && l.includes('"environment"'));
    await vi.waitFor(() => expect(line()).toBeDefined(), { timeout: 5_000 });
    expect(JSON.parse(line()!)).toMatchObject({ seen: [], team: 'team-value' });
  });
});

describe('a looping handler beside a calm one on the same event type, in one delivery', () => {
  for (const threads of [1, 2]) {
    it(`with ${threads} thread(s): the looping call is timed out, the calm one completes, answers go on`, async () => {
      // The file's servers: one thread as above, two started for this test.
      const m = threads === 1 ? modes.threads : await twoThreads!;
      const id = await m.send('pod.destroy_failed', { loop: true });
      const after = await m.send('pod.created', { pod_id: 'p' });
      const outcome = await m.settled(id);
      expect(outcome.status).toBe('dead');
      expect(outcome.lastError).toMatch(/^loopy: HandlerTimeoutError: timed out after 1000 ms/);
      expect(outcome.runs).toEqual([
        { handler: 'calm', status: 'succeeded' },
        { handler: 'loopy', status: 'failed' },
      ]);
      const notes = readFileSync(m.record, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { what: string; id: string });
      expect(notes.filter((n) => n.id === id && n.what === 'calm end')).toHaveLength(1);
      expect((await m.settled(after)).status).toBe('processed');
    });
  }
});
