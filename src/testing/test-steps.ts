import { createStepSeal, memoryJournals, type StepJournals, type StepRecord } from '../core/steps/index.js';

/** A test's durable steps: what runs of a handler recorded, and the clock its sleeps read. */
export interface TestSteps {
  /** Every step recorded so far, as the store would keep them. */
  readonly records: StepRecord[];
  /** The clock steps and sleeps read (epoch ms); a parked run moves it to its wake time. */
  now: number;
  /** The names of the steps whose function ran, in every run so far, in order. */
  readonly ran: string[];
  /** For runHandler. */
  readonly journals: StepJournals;
  /** The seal of sensitive results (a fixed test key unless one is given). */
  readonly seal: ReturnType<typeof createStepSeal>;
}

export interface TestStepsOptions {
  /** Where the clock starts (default: now). */
  now?: number;
  /** STEP_ENCRYPTION_KEY for sensitive steps (default: a fixed test key). */
  key?: string;
}

const TEST_KEY = '00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff';

/**
 * Durable steps kept in memory, for `runHandler(handler, event, { steps })`: run the handler, run
 * it again, and see which steps ran and which were given back. A run that parks at a sleep moves
 * `now` to its wake time, so the next run wakes: sleeps advance the clock instead of waiting.
 *
 * @example
 * const steps = createTestSteps();
 * await runHandler(handler, event, { steps, stopAfterStep: 1 }); // as if the process died there
 * const again = await runHandler(handler, event, { steps });
 * expect(again.steps.replayed).toEqual(['queue diagnose']);
 */
export function createTestSteps({ now = Date.now(), key = TEST_KEY }: TestStepsOptions = {}): TestSteps {
  const memory = memoryJournals();
  return { records: memory.records, now, ran: [], journals: memory, seal: createStepSeal(key) };
}
