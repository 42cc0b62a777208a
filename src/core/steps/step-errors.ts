import type { StepRecord } from './step-record.js';

/**
 * A durable step's error. `code` is what code branches on; `permanent`: running the handler again
 * cannot help (the delivery is dead at once, with the step named).
 */
export class StepError extends Error {
  constructor(
    readonly code: 'step_mismatch' | 'step_failed' | 'step_result' | 'step_after_return' | 'step_key_missing' | 'step_sleep' | 'step_nested' | 'step_wait',
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
  const what = (k: string, n: string) => (k === 'step' ? `"${n}"` : `${k} "${n}"`);
  return new StepError(
    'step_mismatch',
    `step mismatch: recorded ${what(recorded.kind, recorded.name)} at #${recorded.seq}, now ${what(kind, name)}: the handler changed under this run; replay it with --fresh to run it from the start`,
    true,
  );
}

/**
 * An error as a run records it: its own `toRunError()` when it has one (a `PodsError`: its code and
 * request id), else `<name>: <message>`.
 */
export function describeRunError(error: unknown): string {
  const own = (error as { toRunError?: unknown } | null)?.toRunError;
  if (typeof own === 'function') return String(own.call(error));
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

/** Whether an error says retrying cannot help (`permanent: true`: a `StepError` of that kind, a `PodsError` the service refused). */
export const isPermanent = (error: unknown): boolean => (error as { permanent?: unknown } | null)?.permanent === true;

/**
 * Whether an error asks for the run to be parked until a time rather than failed (`parkUntil`,
 * epoch ms: a `PodsRateLimited`, whose bucket has a token then).
 */
export const parkRequest = (error: unknown): number | undefined => {
  const at = (error as { parkUntil?: unknown } | null)?.parkUntil;
  return typeof at === 'number' && Number.isFinite(at) ? at : undefined;
};

/**
 * A step's function threw: the run fails; the step is tried again on the next run, its attempt
 * counted, unless what it threw is permanent (then the delivery is dead, the step named).
 */
export function stepFailed(name: string, seq: number, attempt: number, cause: unknown): StepError {
  return new StepError('step_failed', `step "${name}" (#${seq}, attempt ${attempt}) failed: ${describeRunError(cause)}`, isPermanent(cause), { cause });
}

/** Thrown where a sleep parks the run: the code after it runs when the run is woken. Not a failure. */
export class RunParked {
  constructor(readonly wakeAt: number) {}
}
