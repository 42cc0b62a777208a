// Durable steps in `podhook serve` with handler threads on SQLite (issue 36 §5): the process is
// killed with SIGKILL between two steps and during a sleep, and started again on the same
// database; a step that throws is retried alone. The step-handlers fixture appends each side
// effect to $RECORD_FILE from the handler thread, with its process id.
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Delivery } from '../../src/core/delivery.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { killHard, send } from '../helpers/replicas.js';
import { TEST_SECRET } from '../helpers/sign.js';
import { runCli, type ServerProcess } from '../helpers/spawn-podhook.js';
import { openStepGate, readStepNotes, spawnStepServer, stepDelivery, stepRecordFile } from '../helpers/step-server.js';
import { dbIn, useTempDir } from '../helpers/temp-dir.js';

const tempDir = useTempDir('podhook-steps-threads-');
const servers: ServerProcess[] = [];
const closers: (() => void)[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.child.kill('SIGKILL');
  for (const c of closers.splice(0)) c();
});

async function start(env: Record<string, string> = {}) {
  const dir = tempDir();
  const path = dbIn(dir);
  const record = stepRecordFile(dir);
  const base = { DATABASE_PATH: path, SVC_WEBHOOK_SECRET: TEST_SECRET, RECORD_FILE: record, DISPATCH_POLL_MS: '100', LEASE_MS: '1000', ...env };
  const serve = async () => {
    const server = await spawnStepServer(base);
    servers.push(server);
    return server;
  };
  const first = await serve();
  const opened = openSqliteStore(path);
  closers.push(() => opened.close());
  const { store } = opened;
  const notes = (id: string) => readStepNotes(record).filter((n) => n.id === id);
  const settled = (id: string, status: string, timeout = 30_000) =>
    vi.waitFor(async () => expect((await store.get(id))?.status).toBe(status), { timeout, interval: 50 });
  return { first, serve, store, notes, settled, record, path, get: (id: string) => store.get(id) as Promise<Delivery> };
}

describe('durable steps in handler threads, the process killed and started again', () => {
  it('killed with SIGKILL after step one is recorded and before step two: after the restart step one\'s side effect happened once, steps two and three ran', { timeout: 60_000 }, async () => {
    const t = await start();
    const d = stepDelivery('pod.created', { block_two: true });
    expect((await send(t.first.url, d)).status).toBe(200);
    await vi.waitFor(() => expect(t.notes(d.eventId).map((n) => n.what)).toContain('two:start'), { timeout: 20_000, interval: 20 });
    // Step two started after step one's result was on record.
    expect((await t.store.loadSteps(d.eventId, 'threeSteps')).map((s) => [s.seq, s.name, s.state])).toEqual([[1, 'one', 'done']]);
    const firstPid = t.first.child.pid!;
    await killHard(t.first);
    openStepGate(t.record);
    const again = await t.serve();
    await t.settled(d.eventId, 'processed');

    const lines = t.notes(d.eventId);
    const who = (pid: number) => (pid === firstPid ? 'killed' : pid === again.child.pid ? 'restarted' : `pid ${pid}`);
    expect(lines.map((n) => [n.what, who(n.pid)])).toEqual([
      ['one', 'killed'],
      ['two:start', 'killed'],
      ['two:start', 'restarted'],
      ['two', 'restarted'],
      ['three', 'restarted'],
    ]);
    // Step two's function got the same key in both processes; step three got step one's recorded result.
    const twos = lines.filter((n) => n.what === 'two:start');
    expect(twos[1]!.key).toBe(twos[0]!.key);
    expect(lines.find((n) => n.what === 'three')!.error).toBeUndefined();
    expect((await t.store.loadSteps(d.eventId, 'threeSteps')).map((s) => [s.seq, s.name, s.state])).toEqual([[1, 'one', 'done'], [2, 'two', 'done'], [3, 'three', 'done']]);
  });

  it('step two throws twice, then succeeds: step one ran once, and the run\'s attempts say so', { timeout: 60_000 }, async () => {
    const t = await start({ RETRY_BASE_MS: '100' });
    const d = stepDelivery('pod.created', { fail_two: 2 });
    expect((await send(t.first.url, d)).status).toBe(200);
    await t.settled(d.eventId, 'processed');

    const lines = t.notes(d.eventId);
    expect(lines.map((n) => [n.what, n.attempt])).toEqual([['one', 1], ['two:start', 1], ['two:start', 2], ['two:start', 3], ['two', 3], ['three', 1]]);
    expect(new Set(lines.filter((n) => n.what === 'two:start').map((n) => n.key)).size).toBe(1);
    expect((await t.store.loadSteps(d.eventId, 'threeSteps')).map((s) => [s.name, s.state, s.attempts])).toEqual([['one', 'done', 1], ['two', 'done', 3], ['three', 'done', 1]]);
    const history = await t.store.handlerAttempts([d.eventId]);
    expect(history.map((h) => [h.attempt, h.outcome])).toEqual([[1, 'failed'], [2, 'failed'], [3, 'succeeded']]);
    expect(history[0]!.error).toBe('StepError: step "two" (#2, attempt 1) failed: Error: step two refuses attempt 1');
    expect(history[1]!.error).toBe('StepError: step "two" (#2, attempt 2) failed: Error: step two refuses attempt 2');

    const listed = await runCli(['deliveries', '--json'], { DATABASE_PATH: t.path });
    expect(listed.code).toBe(0);
    const row = (JSON.parse(listed.stdout) as { event_id: string; status: string; attempts: number; last_error: string | null }[]).find((r) => r.event_id === d.eventId);
    expect(row).toMatchObject({ status: 'processed', attempts: 3 });
  });

  it('ctx.sleep(\'nap\', \'3s\') with the process killed during the sleep: the run wakes after the restart, not before its wake time, once; the code after the sleep runs once', { timeout: 60_000 }, async () => {
    const t = await start();
    const d = stepDelivery('pod.backup.failed', { sleep: '3s' });
    expect((await send(t.first.url, d)).status).toBe(200);
    let wakeAt = 0;
    await vi.waitFor(
      async () => {
        const parked = await t.store.parkedRuns([d.eventId]);
        expect(parked).toMatchObject([{ handler: 'sleeper', step: 'nap' }]);
        wakeAt = parked[0]!.wakeAt;
        // Parked once its outcome is written: queued, due at the wake time, no attempt counted.
        expect(await t.get(d.eventId)).toMatchObject({ status: 'queued', attempts: 0, nextAttemptAt: wakeAt });
      },
      { timeout: 20_000, interval: 20 },
    );
    const firstPid = t.first.child.pid!;
    await killHard(t.first);
    const restartedAt = Date.now();
    const again = await t.serve();
    await t.settled(d.eventId, 'processed');

    const lines = t.notes(d.eventId);
    expect(lines.map((n) => [n.what, n.pid === firstPid ? 'killed' : n.pid === again.child.pid ? 'restarted' : n.pid])).toEqual([
      ['before', 'killed'],
      ['after-sleep', 'restarted'],
      ['after', 'restarted'],
    ]);
    const woke = lines.find((n) => n.what === 'after-sleep')!;
    expect(woke.at).toBeGreaterThanOrEqual(wakeAt);
    expect(woke.at).toBeGreaterThanOrEqual(restartedAt);
    const history = await t.store.handlerAttempts([d.eventId]);
    expect(history.map((h) => h.outcome)).toEqual(['parked', 'succeeded']);
    expect(await t.get(d.eventId)).toMatchObject({ status: 'processed', attempts: 1 });
    expect(await t.store.parkedRuns([d.eventId])).toEqual([]);
  });
});
