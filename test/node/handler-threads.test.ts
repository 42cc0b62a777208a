// Handlers run in worker threads beside the answer (HANDLER_THREADS): whatever a handler does,
// the receiver answers every signed delivery, and each misbehaving run ends as its own failure.
import { readFileSync } from 'node:fs';
import { once } from 'node:events';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Delivery } from '../../src/core/delivery.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { UNRULY_REGISTRY } from '../fixtures/registry-paths.js';
import { signDelivery, TEST_SECRET } from '../helpers/sign.js';
import { spawnServer, type ServerProcess } from '../helpers/spawn-podhook.js';
import { dbIn, useTempDir } from '../helpers/temp-dir.js';

const tempDir = useTempDir();
const nowS = () => Math.floor(Date.now() / 1000);
const servers: ServerProcess[] = [];
let sent = 0;
afterEach(() => {
  for (const s of servers.splice(0)) s.child.kill('SIGKILL');
});

interface Note {
  handler: string;
  id: string;
  phase: 'start' | 'end';
  pid: number;
  at: number;
}

async function start(env: Record<string, string> = {}) {
  const dir = tempDir();
  const path = dbIn(dir);
  const record = join(dir, 'record.jsonl');
  const base = { DATABASE_PATH: path, SVC_WEBHOOK_SECRET: TEST_SECRET, RECORD_FILE: record, DISPATCH_POLL_MS: '100', RETRY_BASE_MS: '60000', ...env };
  const server = await spawnServer({ HANDLER_THREADS: '1', ...base }, { handlers: UNRULY_REGISTRY });
  servers.push(server);
  const opened = openSqliteStore(path);
  const notes = (): Note[] => {
    try {
      return readFileSync(record, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as Note);
    } catch {
      return [];
    }
  };
  /** Sends one signed delivery; resolves with its answer's status and when it came. */
  const send = async (eventType: string, body: Record<string, unknown> = {}) => {
    // Each body its own: the same signed content twice would be a replay (quarantined).
    const d = signDelivery({ t: nowS(), eventType, body: { ...body, n: ++sent } });
    const res = await fetch(`${server.url}/webhooks`, { method: 'POST', headers: d.headers, body: d.body });
    return { id: d.eventId, status: res.status, at: Date.now() };
  };
  const get = (id: string) => opened.store.get(id) as Promise<Delivery>;
  const settled = (id: string, status: string) => vi.waitFor(async () => expect((await get(id))?.status).toBe(status), { timeout: 20_000, interval: 50 });
  const metrics = async () => (await fetch(`${server.url}/metrics`)).text();
  return { server, send, get, settled, notes, metrics, path, base, close: () => opened.close() };
}

/** Sends a steady delivery every 50 ms until `until` resolves; every answer must be 200. */
async function keepSending(t: Awaited<ReturnType<typeof start>>, until: Promise<unknown>) {
  const answers: { status: number; at: number; id: string }[] = [];
  let done = false;
  void until.finally(() => (done = true));
  while (!done) {
    answers.push(await t.send('pod.status.changed', { pod: { id: 'p' } }));
    await new Promise((r) => setTimeout(r, 50));
  }
  return answers;
}

describe('handlers in worker threads', () => {
  it('answers every delivery while a handler computes on its thread, long before the computation ends', async () => {
    const t = await start();
    const busy = await t.send('pod.created', { cpu_ms: 2_000 });
    expect(busy.status).toBe(200);
    await vi.waitFor(() => expect(t.notes().some((n) => n.id === busy.id && n.phase === 'start')).toBe(true), { timeout: 15_000 });
    const ended = vi.waitFor(() => expect(t.notes().find((n) => n.id === busy.id && n.phase === 'end')).toBeDefined(), { timeout: 20_000, interval: 20 });
    const answers = await keepSending(t, ended);
    const end = t.notes().find((n) => n.id === busy.id && n.phase === 'end')!;
    expect(answers.every((a) => a.status === 200)).toBe(true);
    // Answers kept coming while the handler computed: with it on the answering thread there would be none.
    expect(answers.filter((a) => a.at < end.at).length).toBeGreaterThanOrEqual(5);
    // The handler ran in the server's process (a thread of it), not in a process of its own.
    expect(end.pid).toBe(t.server.child.pid);
    await t.settled(busy.id, 'processed');
    t.close();
  });

  it('replaces a thread stuck in an endless loop: the run fails as a time-out, answers go on throughout, the next deliveries run', async () => {
    const t = await start();
    const spin = await t.send('pod.active', { loop: true });
    await vi.waitFor(() => expect(t.notes().some((n) => n.id === spin.id && n.phase === 'start')).toBe(true), { timeout: 15_000 });
    const failed = t.settled(spin.id, 'failed');
    const answers = await keepSending(t, failed);
    expect(answers.length).toBeGreaterThanOrEqual(5);
    expect(answers.every((a) => a.status === 200)).toBe(true);
    expect((await t.get(spin.id)).lastError).toMatch(/^spin: HandlerTimeoutError: timed out after 1000 ms/);
    // The steady deliveries sent during the loop all ran, on the new thread.
    for (const a of answers) await t.settled(a.id, 'processed');
    expect(await t.metrics()).toContain('podhook_handler_thread_restarts_total{reason="timeout"} 1');
    expect(t.server.output()).toContain('handler did not give back its thread after its time limit');
    t.close();
  });

  it('blames the looping call, not one that waits behind it on the same thread and whose time limit passes first', async () => {
    const t = await start();
    // waiter (limit 800 ms) awaits a timer that cannot fire while spin (limit 1,000 ms) loops on their one thread.
    const waiting = await t.send('pod.backup.completed');
    await vi.waitFor(() => expect(t.notes().some((n) => n.id === waiting.id && n.phase === 'start')).toBe(true), { timeout: 15_000 });
    const spin = await t.send('pod.active', { loop: true });
    await t.settled(spin.id, 'failed');
    expect((await t.get(spin.id)).lastError).toMatch(/^spin: HandlerTimeoutError: timed out after 1000 ms/);
    // The waiter was cut short, not failed: due again at once, it ran to its end on the new thread.
    await t.settled(waiting.id, 'processed');
    expect(await t.get(waiting.id)).toMatchObject({ attempts: 1, lastError: null });
    expect(t.notes().filter((n) => n.id === waiting.id).map((n) => n.phase)).toEqual(['start', 'start', 'end']);
    expect(await t.metrics()).toContain('podhook_handler_thread_restarts_total{reason="timeout"} 1');
    t.close();
  });

  it('keeps watching a thread whose looping call was ended by a lost lease: the thread is replaced on its own, and a looping call after it is named and timed out (47 item 8)', { timeout: 40_000 }, async () => {
    const t = await start({ LEASE_MS: '900' });
    const spin = await t.send('pod.active', { loop: true });
    await vi.waitFor(() => expect(t.notes().some((n) => n.id === spin.id && n.phase === 'start')).toBe(true), { timeout: 15_000 });
    // Another claim takes the delivery (a replica after this one paused): the next renewal finds
    // it gone and ends the call, whose code goes on looping on the thread.
    const db = new Database(t.path);
    db.pragma('busy_timeout = 5000');
    db.prepare("update deliveries set lease_owner = 'elsewhere', claim_id = 'elsewhere.1', lease_until = ? where event_id = ?").run(Date.now() + 60_000, spin.id);
    db.close();
    await vi.waitFor(() => expect(t.server.output()).toContain('lease lost: this replica records no outcome for it'), { timeout: 10_000, interval: 50 });
    // Nothing else was sent: the watchdog alone sees the thread has not come back, and replaces it.
    await vi.waitFor(async () => expect(await t.metrics()).toContain('podhook_handler_thread_restarts_total{reason="timeout"} 1'), { timeout: 15_000, interval: 100 });
    await vi.waitFor(() => expect(t.server.output()).toContain('code left behind by a finished handler call does not give back its thread'), { timeout: 5_000, interval: 50 });
    // A looping call later is charged with its own time-out, on a thread that was not stuck.
    const again = await t.send('pod.active', { loop: true });
    await t.settled(again.id, 'failed');
    expect((await t.get(again.id)).lastError).toMatch(/^spin: HandlerTimeoutError: timed out after 1000 ms/);
    expect(await t.metrics()).toContain('podhook_handler_thread_restarts_total{reason="timeout"} 2');
    const after = await t.send('pod.status.changed', {});
    await t.settled(after.id, 'processed');
    t.close();
  });

  it('fails the run a stray timer exception or a promise left to reject came from, and keeps answering', async () => {
    const t = await start();
    const timer = await t.send('pod.destroyed', {});
    const rejection = await t.send('pod.renewed', {});
    await t.settled(timer.id, 'failed');
    await t.settled(rejection.id, 'failed');
    expect((await t.get(timer.id)).lastError).toBe(`strayTimer: Error: stray timer of ${timer.id}`);
    expect((await t.get(rejection.id)).lastError).toBe(`strayRejection: Error: left behind by ${rejection.id}`);
    const after = await t.send('pod.status.changed', {});
    expect(after.status).toBe(200);
    await t.settled(after.id, 'processed');
    const text = await t.metrics();
    expect(text).toContain('podhook_handler_stray_errors_total{handler="strayTimer",kind="uncaught_exception"} 1');
    expect(text).toContain('podhook_handler_stray_errors_total{handler="strayRejection",kind="unhandled_rejection"} 1');
    expect(t.server.child.exitCode).toBeNull();
    t.close();
  });

  it('logs and counts a stray error that comes after its run ended, with the handler\'s name; the run stays as recorded', async () => {
    const t = await start();
    const late = await t.send('pod.destroyed', { after: true });
    await t.settled(late.id, 'processed');
    await vi.waitFor(() => expect(t.server.output()).toContain('handler left an error behind after its run'), { timeout: 10_000 });
    const line = t.server.output().split('\n').find((l) => l.includes('handler left an error behind after its run'))!;
    expect(JSON.parse(line)).toMatchObject({ handler: 'strayTimer', kind: 'uncaught_exception', err: `Error: stray timer of ${late.id}`, run_failed: false });
    expect(await t.metrics()).toContain('podhook_handler_stray_errors_total{handler="strayTimer",kind="uncaught_exception"} 1');
    expect((await t.send('pod.status.changed', {})).status).toBe(200);
    t.close();
  });

  it('fails a heap-hungry run with "out of memory in handler NAME" and replaces its thread', async () => {
    const t = await start({ HANDLER_THREAD_HEAP_MB: '32' });
    const hog = await t.send('pod.expiring', {});
    await t.settled(hog.id, 'failed');
    expect((await t.get(hog.id)).lastError).toBe('hog: HandlerOutOfMemory: out of memory in handler hog');
    const after = await t.send('pod.status.changed', {});
    expect(after.status).toBe(200);
    await t.settled(after.id, 'processed');
    expect(await t.metrics()).toContain('podhook_handler_thread_restarts_total{reason="out_of_memory"} 1');
    t.close();
  });

  it('runs again after a restart a delivery whose handler was running in a thread when the process was killed with SIGKILL', async () => {
    const t = await start({ LEASE_MS: '1000' });
    const busy = await t.send('pod.created', { cpu_ms: 1_500 });
    await vi.waitFor(() => expect(t.notes().some((n) => n.id === busy.id && n.phase === 'start')).toBe(true), { timeout: 15_000 });
    t.server.child.kill('SIGKILL');
    await once(t.server.child, 'close');
    const again = await spawnServer({ HANDLER_THREADS: '1', ...t.base }, { handlers: UNRULY_REGISTRY });
    servers.push(again);
    await t.settled(busy.id, 'processed');
    const runs = t.notes().filter((n) => n.id === busy.id);
    expect(runs.filter((n) => n.phase === 'start').map((n) => n.pid)).toEqual([t.server.child.pid, again.child.pid]);
    expect(runs.filter((n) => n.phase === 'end').map((n) => n.pid)).toEqual([again.child.pid]);
    t.close();
  });
});
