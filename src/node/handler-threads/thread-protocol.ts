// The messages between the receiver's thread and a handler thread. Per delivery: one `run` there
// (its body a transferred buffer), one `done` back (every call's result and every log line). Only a
// call that uses durable steps or `ctx.pods` adds an `ask` and its `answer`.
import type { HandlerResult } from '../../core/dispatch/handler-result.js';
import type { HandlerLine } from '../../core/runner/handler-log.js';
import type { GateContext } from '../../core/runner/handler-runner.js';
import type { StepRecord } from '../../core/steps/step-record.js';
import type { WaitAsk } from '../../core/waits/waited-event.js';
import type { StrayKind } from '../call-scope.js';

/** What a handler thread is started with. */
export interface ThreadData {
  /** The registry module (handlers/index.ts or `--handlers MODULE`), as a file URL. */
  registry: string;
  /** This thread's entry module (handler-thread.ts, or .js once compiled), as a file URL. */
  entry: string;
  /** tsx's ESM API and the tsconfig to register it with, when the sources are TypeScript. */
  tsx?: { api: string; tsconfig: string };
  /** LOG_LEVEL: lines below it are not made at all. */
  logLevel: string;
  /** Time limit per handler call, unless the handler sets its own. */
  handlerTimeoutMs: number;
  /** STEP_ENCRYPTION_KEY: sensitive step results are sealed in the thread, before they leave it. */
  stepKey: string | null;
  /** The work-count test's counters (src/core/observability/work-count.ts), when it counts. */
  workCounts?: SharedArrayBuffer;
}

/** One call of a job as it crosses: the handler by name. */
export interface CallSpec {
  handler: string;
  attempt: number;
  context?: GateContext;
  /** The call's span (tracing on), as W3C `traceparent`: the handler's own spans nest under it. */
  traceParent?: string;
}

/** A log line of a job's call, by the call's place in the job. */
export type ThreadLine = HandlerLine & { call: number };

/** A call's result as it crosses back: what the receiver does not know already. */
export type ThreadResult = Omit<HandlerResult, 'handler' | 'attempt' | 'interrupted'>;

/** What a thread asks the receiver's thread to do for a call (which holds the store, the API key and the buckets). */
export type Ask =
  | { op: 'steps.load'; eventId: string; handler: string }
  | { op: 'steps.save'; step: StepRecord; claimId: string }
  | { op: 'steps.wait'; wait: WaitAsk; claimId: string }
  | { op: 'pods'; name: string; args: [callArgs: unknown, options: unknown] };

/** An ask's failure as it crosses: enough to make the same error again (a `PodsError`, `PodsRateLimited`). */
export interface AskError {
  kind: 'pods' | 'rate_limited' | 'error';
  name: string;
  message: string;
  code?: string;
  status?: number;
  requestId?: string | null;
  details?: Record<string, unknown>;
  operation?: string;
  bucket?: string;
  retryAt?: number;
}

export type ToThread =
  /** Run one delivery's calls; the thread answers `done` with the same id. */
  | { t: 'run'; id: number; eventId: string; eventType: string; signatureT: number; receivedAt: number; body: Uint8Array; calls: CallSpec[]; claimId: string }
  /** The answer to an `ask`. */
  | { t: 'answer'; rid: number; ok: true; value: unknown }
  | { t: 'answer'; rid: number; ok: false; error: AskError }
  /** End the calls of one delivery (its lease was lost) or every call (shutdown) at once; their results are no longer awaited. */
  | { t: 'abort'; eventId?: string; reason: string }
  /** Flush what the thread keeps (its spans) and exit. */
  | { t: 'close' };

export type FromThread =
  /** The registry loaded: runs may come. */
  | { t: 'ready' }
  /** The registry could not be loaded in the thread. */
  | { t: 'fatal'; error: string }
  /** A run ended: each call's result in order (or the body could not be parsed), and the lines not sent yet. */
  | { t: 'done'; id: number; results: ThreadResult[] | null; invalidBody?: string; lines: ThreadLine[] }
  /** Lines of a run still going, sent about once a second, so a long handler's progress shows as it happens. */
  | { t: 'lines'; id: number; lines: ThreadLine[] }
  /** A call asks the receiver's thread for something; `answer` with the same `rid` follows. */
  | { t: 'ask'; rid: number; run: number; ask: Ask }
  /** The call that asked ended before its answer came: the receiver stops waiting and sending for it. */
  | { t: 'cancel'; rid: number }
  /**
   * An exception or rejection nothing caught, left behind by handler code: `run`/`handler` the call
   * it came from, when one can be named; `failedRun`: that call was running, and this error failed it.
   */
  | { t: 'stray'; kind: StrayKind; error: string; run?: number; handler?: string; failedRun: boolean };
