import type { Clock } from '../clock.js';
import type { PayloadSchemaMap } from '../dispatch/typed-payload.js';
import type { PodsClient } from '../pods/pods-client.js';
import { callBindings, type CallBindings, type LineWriter } from './handler-lines.js';
import type { HandlerRunner } from './handler-runner.js';
import { createJobRunner, type CallScope, type RunnerSteps } from './job-runner.js';

export interface InThisThreadOptions {
  clock: Clock;
  /** Time limit per handler call, unless the handler sets its own. */
  handlerTimeoutMs: number;
  /** Writes each handler line (the receiver's writer: redacted, with the call's bindings). */
  lines: LineWriter;
  /** The lowest handler level written (`handlerLevelFloor(LOG_LEVEL)`; default: info). */
  levelFloor?: number;
  schemas?: PayloadSchemaMap;
  steps?: RunnerSteps;
  pods?: () => Promise<PodsClient>;
  scope?: CallScope;
}

/**
 * Runs handler code in this thread (HANDLER_THREADS=0, the Worker's isolate, `podhook replay`, the
 * test kit): the core runner, its lines written at once.
 */
export function createInThisThreadRunner({ lines, levelFloor = 1, ...options }: InThisThreadOptions): HandlerRunner {
  return createJobRunner({
    ...options,
    levelFloor,
    lines: (job, index) => {
      let bindings: CallBindings | undefined;
      return (line) => lines((bindings ??= callBindings(job.delivery, job.calls[index]!.handler.name, job.calls[index]!.attempt)), line);
    },
  });
}
