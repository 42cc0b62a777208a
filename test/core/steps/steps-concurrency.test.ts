// A step runs once, or says why not (issue 47 §1-3): steps started together (Promise.all) are all
// recorded before the run ends, even when one of them fails first; a step inside another step's
// function is refused at the call; a sensitive step without a key never runs its function.
// Through the test kit, which runs handlers with the dispatcher's own runner.
import { describe, expect, it } from 'vitest';
import { defineHandler } from '../../../src/index.js';
import { createTestSteps, runHandler, testEvent } from '../../../src/testing/index.js';

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('a run that reaches its time limit inside a step', () => {
  it('records a step whose call is answered just after the limit before the run ends, so the retry does not call again', async () => {
    let calls = 0;
    const handler = defineHandler('pod.created', async function late(_event, { step }) {
      // A call that ignores the signal and is answered 60 ms past the limit (a request already on the wire).
      await step('queue', async () => (await wait(160), ++calls));
    });
    const steps = createTestSteps();
    const event = testEvent('pod.created');
    const first = await runHandler(handler, event, { steps, timeoutMs: 100 });
    expect(first.ok).toBe(false);
    expect(String(first.error)).toMatch(/timed out after 100 ms/);
    // On record when the run ended, not some time later.
    expect(steps.records.filter((r) => r.state === 'done').map((r) => r.name)).toEqual(['queue']);
    const second = await runHandler(handler, testEvent('pod.created', { id: event.id, payload: event.payload, attempt: 2 }), { steps, timeoutMs: 100 });
    expect(second.ok).toBe(true);
    expect(second.steps.replayed).toEqual(['queue']);
    expect(calls).toBe(1);
  });
});

describe('steps started together', () => {
  it('Promise.all with one step failing first: the slow ones are recorded before the run ends, and the retry runs only the failed one', async () => {
    const effects: string[] = [];
    const handler = defineHandler('pod.created', async function parallel(_event, { step }) {
      await Promise.all([
        step('slow a', async ({ idempotencyKey }) => (await wait(50), effects.push(`a ${idempotencyKey}`), 'a')),
        step('slow b', async ({ idempotencyKey }) => (await wait(80), effects.push(`b ${idempotencyKey}`), 'b')),
        step('fails first', async ({ attempt }) => {
          if (attempt === 1) throw new Error('not yet');
          effects.push('c');
          return 'c';
        }),
      ]);
    });
    const steps = createTestSteps();
    const event = testEvent('pod.created');
    const first = await runHandler(handler, event, { steps });
    expect(first.ok).toBe(false);
    // The run did not end before the slow steps were on record.
    expect(steps.records.filter((r) => r.state === 'done').map((r) => r.name).sort()).toEqual(['slow a', 'slow b']);
    const second = await runHandler(handler, testEvent('pod.created', { id: event.id, payload: event.payload, attempt: 2 }), { steps });
    expect(second.ok).toBe(true);
    expect(second.steps.replayed.sort()).toEqual(['slow a', 'slow b']);
    expect(second.steps.ran).toEqual(['fails first']);
    // Each side effect once.
    expect(effects.filter((e) => e.startsWith('a '))).toHaveLength(1);
    expect(effects.filter((e) => e.startsWith('b '))).toHaveLength(1);
  });

  it('steps reached in another order on the retry (after different awaits) find their own records and keys', async () => {
    const keys = new Map<string, string[]>();
    let order: 'a first' | 'b first' = 'a first';
    const handler = defineHandler('pod.created', async function branches(_event, { step }) {
      const branch = async (name: string, delay: number) => {
        await wait(delay);
        return step(name, ({ idempotencyKey }) => (keys.set(name, [...(keys.get(name) ?? []), idempotencyKey]), name));
      };
      await Promise.all([branch('a', order === 'a first' ? 0 : 40), branch('b', order === 'a first' ? 40 : 0)]);
      await step('then', ({ attempt }) => {
        if (attempt === 1) throw new Error('fail once after both');
      });
    });
    const steps = createTestSteps();
    const event = testEvent('pod.created');
    expect((await runHandler(handler, event, { steps })).ok).toBe(false);
    order = 'b first';
    const again = await runHandler(handler, testEvent('pod.created', { id: event.id, payload: event.payload, attempt: 2 }), { steps });
    expect(again.ok, String(again.error)).toBe(true);
    expect(again.steps.replayed.sort()).toEqual(['a', 'b']);
    expect([...keys.values()].map((k) => k.length)).toEqual([1, 1]);
  });
});

describe('a step inside another step', () => {
  it('is refused at the call with a clear error; the delivery would be dead, not broken on its retry', async () => {
    const handler = defineHandler('pod.created', async function nesting(_event, { step }) {
      await step('outer', async () => {
        await step('inner', () => 1);
      });
    });
    const result = await runHandler(handler, testEvent('pod.created'), { steps: createTestSteps() });
    expect(result.ok).toBe(false);
    expect(String(result.error)).toMatch(/step "inner" was asked for inside step "outer": steps do not nest/);
  });

  it('but steps side by side in Promise.all are not nesting', async () => {
    const handler = defineHandler('pod.created', async function sideBySide(_event, { step }) {
      await Promise.all([step('one', () => 1), step('two', async () => (await wait(5), 2))]);
    });
    expect((await runHandler(handler, testEvent('pod.created'), { steps: createTestSteps() })).ok).toBe(true);
  });
});

describe('a sensitive step without STEP_ENCRYPTION_KEY', () => {
  it('fails before its function runs: nothing is minted and thrown away', async () => {
    let minted = 0;
    const handler = defineHandler('pod.created', async function mints(_event, { step }) {
      await step('mint key', () => ++minted, { sensitive: true });
    });
    const result = await runHandler(handler, testEvent('pod.created'), { steps: createTestSteps({ key: '' }) });
    expect(result.ok).toBe(false);
    expect(String(result.error)).toMatch(/sensitive step needs STEP_ENCRYPTION_KEY/);
    expect(minted).toBe(0);
  });
});
