// Durable steps on two `podhook serve` replicas sharing one PostgreSQL (issue 36 §3, §5): a parked
// run wakes on exactly one replica; a replica killed with SIGKILL during a sleep leaves the wake to
// the other; a replica killed mid-step leaves the step to be run again by the other, with the same
// idempotencyKey. The step-handlers fixture appends each side effect, with its process id, to one
// $RECORD_FILE both replicas share.
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { DeliveryStore } from '../../src/core/delivery-store.js';
import { openPostgresStore } from '../../src/store/postgres/open-postgres.js';
import { freshDatabaseUrl } from '../helpers/postgres.js';
import { FAST_LEASES, killHard, replicaPool, send, waitReady } from '../helpers/replicas.js';
import { TEST_SECRET } from '../helpers/sign.js';
import { STEP_REGISTRY } from '../fixtures/registry-paths.js';
import { openStepGate, readStepNotes, stepDelivery, stepRecordFile } from '../helpers/step-server.js';
import { useTempDir } from '../helpers/temp-dir.js';

const pool = replicaPool();
const tempDir = useTempDir('podhook-steps-replicas-');
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await pool.stopAll();
  await Promise.all(closers.splice(0).map((c) => c()));
});

async function twoReplicas() {
  const url = await freshDatabaseUrl();
  const record = stepRecordFile(tempDir());
  // Step two may wait at its start for the test: a time limit well beyond that wait.
  const env = { DATABASE_URL: url, SVC_WEBHOOK_SECRET: TEST_SECRET, RECORD_FILE: record, HANDLER_THREADS: '1', ...FAST_LEASES, HANDLER_TIMEOUT_MS: '30000' };
  const replicas = await Promise.all([0, 1].map(() => pool.start(env, { handlers: STEP_REGISTRY })));
  await waitReady(replicas.map((r) => r.url));
  const { store, close } = await openPostgresStore(url);
  closers.push(close);
  const notes = (id: string) => readStepNotes(record).filter((n) => n.id === id);
  return { replicas, store, record, notes };
}

/** Waits until the delivery's run is parked (its outcome written), and gives its wake time. */
async function parkedAt(store: DeliveryStore, id: string): Promise<number> {
  let wakeAt = 0;
  await vi.waitFor(
    async () => {
      const [run] = await store.parkedRuns([id]);
      expect(run).toBeDefined();
      wakeAt = run!.wakeAt;
      expect(await store.get(id)).toMatchObject({ status: 'queued', attempts: 0, nextAttemptAt: wakeAt });
    },
    { timeout: 20_000, interval: 25 },
  );
  return wakeAt;
}

const processed = (store: DeliveryStore, id: string, timeout = 40_000) =>
  vi.waitFor(async () => expect((await store.get(id))?.status).toBe('processed'), { timeout, interval: 50 });

describe('durable steps on two replicas on one PostgreSQL', () => {
  it('wakes each parked run on exactly one replica: the code after the sleep runs once per delivery', { timeout: 90_000 }, async () => {
    const t = await twoReplicas();
    // Parked on both replicas, all due at about the same time: both look for due work at each poll.
    const ds = Array.from({ length: 6 }, () => stepDelivery('pod.backup.failed', { sleep: '3s' }));
    for (const [i, d] of ds.entries()) expect((await send(t.replicas[i % 2]!.url, d)).status).toBe(200);
    const wakes = new Map<string, number>();
    for (const d of ds) wakes.set(d.eventId, await parkedAt(t.store, d.eventId));
    for (const d of ds) await processed(t.store, d.eventId);

    const pids = new Set(t.replicas.map((r) => r.child.pid));
    for (const d of ds) {
      const lines = t.notes(d.eventId);
      expect(lines.map((n) => n.what), d.eventId).toEqual(['before', 'after-sleep', 'after']);
      expect(pids.has(lines[1]!.pid)).toBe(true);
      expect(lines[1]!.at).toBeGreaterThanOrEqual(wakes.get(d.eventId)!);
      expect((await t.store.handlerAttempts([d.eventId])).map((h) => h.outcome)).toEqual(['parked', 'succeeded']);
    }
  });

  it('a replica killed with SIGKILL during the sleep: the other wakes the run once, not before its wake time', { timeout: 90_000 }, async () => {
    const t = await twoReplicas();
    const [victim, survivor] = t.replicas as [typeof t.replicas[0], typeof t.replicas[0]];
    const d = stepDelivery('pod.backup.failed', { sleep: '3s' });
    expect((await send(victim.url, d)).status).toBe(200);
    const wakeAt = await parkedAt(t.store, d.eventId);
    // The victim parked it (the delivery went to it, and ran there).
    expect(t.notes(d.eventId).map((n) => [n.what, n.pid])).toEqual([['before', victim.child.pid]]);
    await killHard(victim);
    await processed(t.store, d.eventId);

    const lines = t.notes(d.eventId);
    expect(lines.map((n) => [n.what, n.pid])).toEqual([
      ['before', victim.child.pid],
      ['after-sleep', survivor.child.pid],
      ['after', survivor.child.pid],
    ]);
    expect(lines[1]!.at).toBeGreaterThanOrEqual(wakeAt);
  });

  it('a replica killed with SIGKILL mid-step: the other runs that step again, with the same idempotencyKey; the step before it ran once', { timeout: 90_000 }, async () => {
    const t = await twoReplicas();
    const d = stepDelivery('pod.created', { block_two: true });
    expect((await send(t.replicas[0]!.url, d)).status).toBe(200);
    await vi.waitFor(() => expect(t.notes(d.eventId).map((n) => n.what)).toContain('two:start'), { timeout: 20_000, interval: 20 });
    const victimPid = t.notes(d.eventId).find((n) => n.what === 'two:start')!.pid;
    const victim = t.replicas.find((r) => r.child.pid === victimPid)!;
    const survivor = t.replicas.find((r) => r !== victim)!;
    const killedAt = await killHard(victim);
    openStepGate(t.record);
    await processed(t.store, d.eventId);

    const lines = t.notes(d.eventId);
    const who = (pid: number) => (pid === victimPid ? 'killed' : pid === survivor.child.pid ? 'survivor' : `pid ${pid}`);
    expect(lines.map((n) => [n.what, who(n.pid)])).toEqual([
      ['one', 'killed'],
      ['two:start', 'killed'],
      ['two:start', 'survivor'],
      ['two', 'survivor'],
      ['three', 'survivor'],
    ]);
    const [first, again] = lines.filter((n) => n.what === 'two:start');
    expect(again!.key).toBe(first!.key);
    expect(again!.key).toMatch(/^st_[0-9a-f]{40}$/);
    // Taken over once the killed replica's lease ran out, not before.
    expect(again!.at).toBeGreaterThanOrEqual(killedAt);
    expect((await t.store.loadSteps(d.eventId, 'threeSteps')).map((s) => [s.name, s.state])).toEqual([['one', 'done'], ['two', 'done'], ['three', 'done']]);
  });
});
