// Durable steps on the Worker, on D1 in workerd (issue 36 §3, §5): a step's result recorded by one
// invocation is given back to the next without running it again; a run parked at a sleep outlives
// the invocation that parked it (its waitUntil ends) and is woken by the cron trigger's run after
// its wake time, never by an earlier one. The step-handlers fixture keeps its side effects in this
// isolate's memory.
import { describe, expect, it } from 'vitest';
import { handlers, resetStepNotes, stepNotes } from '../fixtures/step-handlers.js';
import { signDelivery, toRequest, TEST_SECRET } from '../helpers/sign.js';
import { openWorkerTarget, runCron } from './worker-target.js';

const MINUTE = 60_000;

async function open() {
  resetStepNotes();
  const t = await openWorkerTarget({ secrets: [TEST_SECRET] }, { handlers, vars: { DISPATCHER: 'on', RETRY_BASE_MS: '1000' } });
  const post = async (eventType: string, body: Record<string, unknown>) => {
    const d = signDelivery({ t: Math.floor(t.now() / 1000), eventType, body });
    // The answer's invocation runs the handlers under its waitUntil, which `fetch` waits for.
    expect((await t.fetch(toRequest(d))).status).toBe(200);
    return d.eventId;
  };
  const notes = (id: string) => stepNotes().filter((n) => n.id === id);
  return { t, post, notes };
}

describe('durable steps on the Worker (D1 in workerd)', () => {
  it('records a step once across two runs: the retry after step two threw gives step one\'s result back without running it', async () => {
    const { t, post, notes } = await open();
    const id = await post('pod.created', { fail_two: 1 });
    expect(notes(id).map((n) => [n.what, n.attempt])).toEqual([['one', 1], ['two:start', 1]]);
    const failed = await t.store.get(id);
    expect(failed).toMatchObject({ status: 'failed', attempts: 1 });

    // The retry is due: the cron's run takes it.
    t.setNow(failed!.nextAttemptAt! + 1);
    await runCron(t);
    expect(notes(id).map((n) => [n.what, n.attempt])).toEqual([['one', 1], ['two:start', 1], ['two:start', 2], ['two', 2], ['three', 1]]);
    expect(notes(id).find((n) => n.what === 'three')!.error).toBeUndefined();
    expect(await t.store.get(id)).toMatchObject({ status: 'processed', attempts: 2 });
    expect((await t.store.loadSteps(id, 'threeSteps')).map((s) => [s.name, s.state, s.attempts])).toEqual([['one', 'done', 1], ['two', 'done', 2], ['three', 'done', 1]]);
    expect((await t.store.handlerAttempts([id])).map((h) => [h.attempt, h.outcome])).toEqual([[1, 'failed'], [2, 'succeeded']]);
  });

  it('parks a run at a sleep past its invocation; the cron\'s run after the wake time wakes it, once; an earlier cron\'s does not', async () => {
    const { t, post, notes } = await open();
    // 90 s, as in the example: longer than waitUntil lasts after the answer (about 30 s).
    const sleptAt = t.now();
    const id = await post('pod.backup.failed', { sleep: '90s' });
    expect(notes(id).map((n) => n.what)).toEqual(['before']);
    expect(await t.store.get(id)).toMatchObject({ status: 'queued', attempts: 0, nextAttemptAt: sleptAt + 90_000 });
    expect(await t.store.parkedRuns([id])).toEqual([{ eventId: id, handler: 'sleeper', step: 'nap', wakeAt: sleptAt + 90_000 }]);

    // The next minute's cron: before the wake time, the run stays parked.
    t.setNow(sleptAt + MINUTE);
    await runCron(t);
    expect(notes(id).map((n) => n.what)).toEqual(['before']);
    expect(await t.store.get(id)).toMatchObject({ status: 'queued', attempts: 0 });

    // The one after it, past the wake time (up to a minute late): this cron run wakes it.
    t.setNow(sleptAt + 2 * MINUTE);
    await runCron(t);
    expect(notes(id).map((n) => n.what)).toEqual(['before', 'after-sleep', 'after']);
    expect(await t.store.get(id)).toMatchObject({ status: 'processed', attempts: 1 });
    expect(await t.store.parkedRuns([id])).toEqual([]);
    expect((await t.store.loadSteps(id, 'sleeper')).map((s) => [s.name, s.state])).toEqual([['before', 'done'], ['nap', 'done'], ['after', 'done']]);
    expect((await t.store.handlerAttempts([id])).map((h) => h.outcome)).toEqual(['parked', 'succeeded']);

    // Woken once: a later cron finds nothing to run.
    t.setNow(sleptAt + 3 * MINUTE);
    await runCron(t);
    expect(notes(id).map((n) => n.what)).toEqual(['before', 'after-sleep', 'after']);
  });
});
