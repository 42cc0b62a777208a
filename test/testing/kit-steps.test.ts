// The test kit runs handlers with durable steps: stop a run after step N, run it again and see
// which steps ran and which were given back; a sleep advances the kit's clock instead of waiting.
// The same kit checks the steps' limits, each a clear error rather than a hang.
import { describe, expect, it } from 'vitest';
import { defineHandler } from 'podhook';
import { createTestSteps, runHandler, testEvent } from 'podhook/testing';

const diagnose = (effects: string[]) =>
  defineHandler('pod.backup.failed', async function diagnoseBackup(event, ctx) {
    const queued = await ctx.step('queue diagnose', ({ idempotencyKey }) => {
      effects.push('queued');
      return { requestId: idempotencyKey };
    });
    await ctx.sleep('wait for output', '90s');
    const output = await ctx.step('read output', () => {
      effects.push('read');
      return `output of ${event.id}`;
    });
    await ctx.step('post', () => void effects.push(`posted ${output} (${queued.requestId})`));
  });

describe('runHandler with durable steps', () => {
  it('stops after step 1 as a crash would, then resumes: step 1 given back, not run again', async () => {
    const effects: string[] = [];
    const steps = createTestSteps({ now: Date.UTC(2026, 10, 28) });
    const event = testEvent('pod.backup.failed');
    const first = await runHandler(diagnose(effects), event, { steps, stopAfterStep: 1 });
    expect(first).toMatchObject({ ok: false, stoppedAfterStep: 1, steps: { ran: ['queue diagnose'], replayed: [] } });
    const second = await runHandler(diagnose(effects), event, { steps });
    // It parks at the sleep: no failure, the kit's clock moved to the wake time.
    expect(second).toMatchObject({ ok: false, outcome: 'parked', parked: { until: new Date(Date.UTC(2026, 10, 28) + 90_000), step: 'wait for output' }, steps: { ran: [], replayed: ['queue diagnose'] } });
    expect(steps.now).toBe(Date.UTC(2026, 10, 28) + 90_000);
    const third = await runHandler(diagnose(effects), event, { steps });
    expect(third).toMatchObject({ ok: true, outcome: 'succeeded', steps: { ran: ['read output', 'post'], replayed: ['queue diagnose'] } });
    expect(effects).toEqual(['queued', 'read', expect.stringMatching(/^posted output of .* \(st_[0-9a-f]{40}\)$/)]);
    expect(steps.ran).toEqual(['queue diagnose', 'read output', 'post']);
  });

  it('gives a step that failed its next try, counting its own attempts', async () => {
    const steps = createTestSteps();
    const seen: number[] = [];
    const flaky = defineHandler('pod.created', async (_e, { step }) => {
      await step('flaky', ({ attempt }) => {
        seen.push(attempt);
        if (attempt < 3) throw new Error(`try ${attempt}`);
      });
    });
    const event = testEvent('pod.created');
    const failed = await runHandler(flaky, event, { steps });
    expect(failed.ok).toBe(false);
    expect(String(failed.error)).toContain('step "flaky" (#1, attempt 1) failed: Error: try 1');
    await runHandler(flaky, event, { steps });
    expect((await runHandler(flaky, event, { steps })).ok).toBe(true);
    expect(seen).toEqual([1, 2, 3]);
  });

  it('fails a handler without `steps` that asks for one, saying so', async () => {
    const r = await runHandler(defineHandler('pod.created', async (_e, { step }) => void (await step('x', () => 1))), testEvent('pod.created'));
    expect(r.ok).toBe(false);
    expect(String(r.error)).toContain('durable steps need a store');
  });
});

describe('the limits of a step, each a clear error', () => {
  const one = (fn: () => unknown, options?: { sensitive?: boolean }) => defineHandler('pod.created', async (_e, { step }) => void (await step('s', fn, options)));
  const run = (fn: () => unknown, options?: { sensitive?: boolean }, steps = createTestSteps()) => runHandler(one(fn, options), testEvent('pod.created'), { steps });

  it.each([
    ['a function', () => ({ f: () => 1 }), 'the result.f is a function'],
    ['a BigInt', () => ({ n: 10n }), '.n is a bigint'],
    ['a Date', () => ({ at: new Date(0) }), '.at is a Date'],
    ['a Map', () => new Map(), 'the result is a Map'],
    ['NaN', () => [1, Number.NaN], '[1] is NaN'],
  ])('refuses a result that is not JSON: %s', async (_what, fn, where) => {
    const r = await run(fn);
    expect(r.ok).toBe(false);
    expect(String(r.error)).toContain('its result must be JSON');
    expect(String(r.error)).toContain(where.replace('the result.f', '.f'));
  });

  it('refuses a cycle and a result over 256 KiB', async () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(String((await run(() => cyclic)).error)).toContain('refers back to itself');
    expect(String((await run(() => 'x'.repeat(300 * 1024))).error)).toMatch(/its result is \d+ bytes, over the 262144/);
  });

  it('keeps undefined and null apart', async () => {
    const steps = createTestSteps();
    const got: unknown[] = [];
    const h = defineHandler('pod.created', async (_e, { step }) => {
      got.push(await step('u', () => undefined), await step('n', () => null));
    });
    const event = testEvent('pod.created');
    await runHandler(h, event, { steps });
    await runHandler(h, event, { steps });
    expect(got).toEqual([undefined, null, undefined, null]);
  });

  it('refuses a step asked for after the handler returned', async () => {
    const steps = createTestSteps();
    let late: Promise<unknown> | undefined;
    const h = defineHandler('pod.created', async (_e, { step }) => {
      late = new Promise((r) => setTimeout(r, 5)).then(() => step('late', () => 1));
    });
    expect((await runHandler(h, testEvent('pod.created'), { steps })).ok).toBe(true);
    await expect(late).rejects.toThrow('step "late" was asked for after the handler returned');
  });

  it('a sensitive step without a key fails naming STEP_ENCRYPTION_KEY; a sleep longer than 30 days is refused', async () => {
    const steps = createTestSteps({ key: '' });
    expect(String((await run(() => 'pk_live_x', { sensitive: true }, steps)).error)).toContain('a sensitive step needs STEP_ENCRYPTION_KEY');
    const long = await runHandler(defineHandler('pod.created', async (_e, { sleep }) => sleep('long', '31d')), testEvent('pod.created'), { steps: createTestSteps() });
    expect(String(long.error)).toContain('is not a duration up to 30 days');
  });
});
