// Durable steps through the dispatcher on a real SQLite store (in this thread): a step's side
// effect is done once, a failing step is retried alone with its own attempts, a sleep parks the
// run without counting as an attempt, and a renamed step stops the run as dead.
import { describe, expect, it } from 'vitest';
import { createDispatcher } from '../../../src/core/dispatch/dispatcher.js';
import { createRouter } from '../../../src/core/dispatch/router.js';
import { defineHandler } from '../../../src/core/events/define-handler.js';
import { silentLogger } from '../../../src/core/observability/logger.js';
import { createStepSeal, storeJournals } from '../../../src/core/steps/index.js';
import { readRuns } from '../../../src/http/admin/admin-queries.js';
import { openSqliteStore } from '../../../src/store/sqlite/sqlite-store.js';
import { dbIn, useTempDir } from '../../helpers/temp-dir.js';
import { newDelivery } from '../../store/store-contract.js';

const tempDir = useTempDir();
const KEY = 'a'.repeat(64);

function setup(handlers: Parameters<typeof createRouter>[0], path = dbIn(tempDir())) {
  const opened = openSqliteStore(path);
  let now = Date.now();
  const router = createRouter(handlers);
  const dispatcher = createDispatcher({
    store: opened.store, router, logger: silentLogger, clock: () => now, retryBaseMs: 1_000, random: () => 1, maxAttempts: 3,
    steps: { journals: storeJournals(opened.store), seal: createStepSeal(KEY) },
  });
  return {
    ...opened, router, dispatcher,
    advance: (ms: number) => (now += ms),
    now: () => now,
    async deliver() {
      const d = newDelivery({ receivedAt: now, eventType: 'pod.backup.failed' });
      await opened.store.claim([d]);
      return d;
    },
  };
}

describe('durable steps through the dispatcher', () => {
  it('retries a failing step alone: the step before it ran once; each step has its own attempts', async () => {
    const effects: string[] = [];
    let secondFails = 2;
    const h = defineHandler('pod.backup.failed', { name: 'diagnose' }, async (_e, { step }) => {
      const queued = await step('queue diagnose', ({ attempt, idempotencyKey }) => {
        effects.push(`queue#${attempt}`);
        return { id: 'a-1', key: idempotencyKey };
      });
      await step('read output', ({ attempt }) => {
        effects.push(`read#${attempt}`);
        if (secondFails-- > 0) throw new Error('not yet');
        return 'ok';
      });
      await step('post', () => void effects.push(`post:${queued.id}`));
    });
    const t = setup([h]);
    const d = await t.deliver();
    for (let i = 0; i < 3; i++) {
      await t.dispatcher.runUntilIdle();
      t.advance(10 * 60_000);
    }
    expect(effects).toEqual(['queue#1', 'read#1', 'read#2', 'read#3', 'post:a-1']);
    const stored = await t.store.get(d.eventId);
    // Three runs, two of them failed attempts: maxAttempts is 3, and the step used 3 tries: not dead.
    expect(stored).toMatchObject({ status: 'processed', attempts: 3 });
    const steps = await t.store.loadSteps(d.eventId, 'diagnose');
    expect(steps.map((s) => [s.seq, s.name, s.state, s.attempts])).toEqual([[1, 'queue diagnose', 'done', 1], [2, 'read output', 'done', 3], [3, 'post', 'done', 1]]);
    // The key is the same in every run of a step, and a valid x-request-id.
    expect(JSON.parse(steps[0]!.result!).v.key).toMatch(/^st_[0-9a-f]{40}$/);
    const runs = await readRuns(t.store, stored!, t.router);
    expect(runs.map((r) => [r.attempt, r.outcome])).toEqual([[1, 'failed'], [2, 'failed'], [3, 'succeeded']]);
    expect(runs[0]!.error).toBe('StepError: step "read output" (#2, attempt 1) failed: Error: not yet');
    t.close();
  });

  it('parks at a sleep (no attempt, no lease), wakes at its time, not before, and runs the code after it once', async () => {
    const after: number[] = [];
    const h = defineHandler('pod.backup.failed', { name: 'waiter' }, async (_e, { step, sleep }) => {
      await step('before', () => 1);
      await sleep('wait for output', '90s');
      after.push(await step('after', () => 2));
    });
    const t = setup([h]);
    const d = await t.deliver();
    await t.dispatcher.runUntilIdle();
    const parked = await t.store.get(d.eventId);
    expect(parked).toMatchObject({ status: 'queued', attempts: 0, nextAttemptAt: t.now() + 90_000 });
    expect(await t.store.parkedRuns([d.eventId])).toEqual([{ eventId: d.eventId, handler: 'waiter', step: 'wait for output', wakeAt: t.now() + 90_000 }]);
    t.advance(89_000);
    await t.dispatcher.runUntilIdle();
    expect(after).toEqual([]);
    t.advance(1_000);
    await t.dispatcher.runUntilIdle();
    expect(after).toEqual([2]);
    expect(await t.store.get(d.eventId)).toMatchObject({ status: 'processed', attempts: 1 });
    expect(await t.store.parkedRuns([d.eventId])).toEqual([]);
    const runs = await readRuns(t.store, (await t.store.get(d.eventId))!, t.router);
    expect(runs.map((r) => [r.attempt, r.outcome])).toEqual([[1, 'parked'], [2, 'succeeded']]);
    t.close();
  });

  it('stops a run whose step at a recorded position was renamed: dead, naming both; a fresh replay runs it from the start', async () => {
    const path = dbIn(tempDir());
    const first = setup([defineHandler('pod.backup.failed', { name: 'h' }, async (_e, { step, sleep }) => {
      await step('queue diagnose', () => 'old');
      await sleep('wait', '1m');
    })], path);
    const d = await first.deliver();
    await first.dispatcher.runUntilIdle();
    first.close();
    // A deploy while the run is parked: the first step has another name now.
    const second = setup([defineHandler('pod.backup.failed', { name: 'h' }, async (_e, { step, sleep }) => {
      await step('queue logs', () => 'new');
      await sleep('wait', '1m');
    })], path);
    second.advance(120_000);
    await second.dispatcher.runUntilIdle();
    const dead = await second.store.get(d.eventId);
    expect(dead).toMatchObject({ status: 'dead' });
    expect(dead!.lastError).toBe('h: StepError: step mismatch: recorded "queue diagnose" at #1, now "queue logs": the handler changed under this run; replay it with --fresh to run it from the start');
    second.close();
  });

  it('seals a sensitive result: its plaintext is in no byte of the database file', async () => {
    const path = dbIn(tempDir());
    const secret = 'pk_live_7f3a9c2e1b4d8f6a0c5e';
    const got: string[] = [];
    const t = setup([defineHandler('pod.backup.failed', { name: 'mint' }, async (_e, { step }) => {
      const key = await step('mint key', () => ({ secret }), { sensitive: true });
      got.push(key.secret);
      await step('fail once', ({ attempt }) => {
        if (attempt === 1) throw new Error('vault down');
      });
    })], path);
    await t.deliver();
    await t.dispatcher.runUntilIdle();
    t.advance(10 * 60_000);
    await t.dispatcher.runUntilIdle();
    // The second run got the recorded (sealed, then opened) result back.
    expect(got).toEqual([secret, secret]);
    t.close();
    const { readFileSync, existsSync } = await import('node:fs');
    for (const file of [path, `${path}-wal`]) if (existsSync(file)) expect(readFileSync(file).includes(Buffer.from(secret))).toBe(false);
  });
});
