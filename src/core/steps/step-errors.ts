import type { StepRecord } from './step-record.js';

/**
 * A durable step's error. `code` is what code branches on; `permanent`: running the handler again
 * cannot help (the delivery is dead at once, with the step named).
 */
export class StepError extends Error {
  constructor(
    readonly code: 'step_mismatch' | 'step_failed' | 'step_result' | 'step_after_return' | 'step_key_missing' | 'step_sleep',
    message: string,
    readonly permanent: boolean,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'StepError';
  }
}

/** The code changed under a recorded run: the step at a recorded position has another name (or kind). */
export function stepMismatch(recorded: Pick<StepRecord, 'seq' | 'name' | 'kind'>, name: string, kind: StepRecord['kind']): StepError {
  const what = (k: string, n: string) => (k === 'sleep' ? `sleep "${n}"` : `"${n}"`);
  return new StepError(
    'step_mismatch',
    `step mismatch: recorded ${what(recorded.kind, recorded.name)} at #${recorded.seq}, now ${what(kind, name)}: the handler changed under this run; replay it with --fresh to run it from the start`,
    true,
  );
}

/** A step's function threw: the run fails; the step is tried again on the next run, its attempt counted. */
export function stepFailed(name: string, seq: number, attempt: number, cause: unknown): StepError {
  const text = cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause);
  return new StepError('step_failed', `step "${name}" (#${seq}, attempt ${attempt}) failed: ${text}`, false, { cause });
}

/** Thrown where a sleep parks the run: the code after it runs when the run is woken. Not a failure. */
export class RunParked {
  constructor(readonly wakeAt: number) {}
}
