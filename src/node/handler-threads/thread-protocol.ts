// The messages between the receiver's thread and a handler thread (structured clone: plain data,
// Dates, Uint8Arrays and Errors cross as they are).
import type { GateContext } from '../../core/dispatch/handler-runner.js';
import type { HandlerOutcome, HandlerResult } from '../../core/dispatch/handler-result.js';
import type { StepRecord } from '../../core/steps/step-record.js';

/** What a handler thread is started with. */
export interface ThreadData {
  /** The registry module (handlers/index.ts or `--handlers MODULE`), as a file URL. */
  registry: string;
  /** This thread's entry module (handler-thread.ts, or .js once compiled), as a file URL. */
  entry: string;
  /** tsx's ESM API and the tsconfig to register it with, when the sources are TypeScript. */
  tsx?: { api: string; tsconfig: string };
  /** LOG_LEVEL: lines below it are not sent to the receiver's thread at all. */
  logLevel: string;
  /** Time limit per handler call, unless the handler sets its own. */
  handlerTimeoutMs: number;
  /** STEP_ENCRYPTION_KEY: sensitive step results are sealed in the thread, before they leave it. */
  stepKey: string | null;
  /**
   * One Int32 the thread keeps set to the id of the call whose code is running (0: none), so a
   * thread stuck in a loop tells which call is looping. Each thread has its own.
   */
  running?: SharedArrayBuffer;
}

/** The delivery a call needs, as it crosses: no headers, no lease. */
export interface ThreadDelivery {
  eventId: string;
  eventType: string;
  signatureT: number;
  receivedAt: number;
  attempts: number;
  body: Uint8Array;
}

export type ToThread =
  /** Run one handler call; the thread answers `done` with the same id. */
  | { t: 'run'; id: number; handler: string; delivery: ThreadDelivery; attempt: number; context?: GateContext; traceParent?: string; claimId?: string }
  /** The answer to a thread's `pods` request: the call's value, or the error it ended with. */
  | { t: 'pods'; rid: number; ok: true; value: unknown }
  | { t: 'pods'; rid: number; ok: false; error: PodsErrorData }
  /** The answer to a thread's `steps` request. */
  | { t: 'steps'; rid: number; ok: true; records?: StepRecord[] }
  | { t: 'steps'; rid: number; ok: false; error: string }
  /** End the calls of one delivery (its lease was lost) or every call (shutdown) at once; their results are no longer awaited. */
  | { t: 'abort'; eventId?: string; reason: string }
  /** Flush what the thread keeps (its spans) and exit. */
  | { t: 'close' };

/** A handler call's result as it crosses back (the core's `HandlerResult` without its handler name and attempt, which the receiver knows). */
export type ThreadResult = Omit<HandlerResult, 'handler' | 'attempt' | 'interrupted'>;

export type FromThread =
  /** The registry loaded: calls may come. */
  | { t: 'ready' }
  /** The registry could not be loaded in the thread. */
  | { t: 'fatal'; error: string }
  | { t: 'done'; id: number; result: ThreadResult }
  /** A call of a handler's `ctx.pods`, made by the receiver's thread (which holds the API key and the buckets). */
  | { t: 'pods'; rid: number; op: PodsOperationName; args: unknown[] }
  /** A run's durable steps, read or written by the receiver's thread (which holds the store). */
  | { t: 'steps'; rid: number; op: 'load'; eventId: string; handler: string }
  | { t: 'steps'; rid: number; op: 'save'; step: StepRecord; claimId: string }
  /** A log line of a handler (its `log`) or of the thread's runner (`handler run`). */
  | { t: 'log'; level: 'debug' | 'info' | 'warn' | 'error'; fields: Record<string, unknown>; msg?: string }
  /**
   * An exception or rejection nothing caught, left behind by handler code. `id` and `handler`: the
   * call it came from (its async context), when one can be named; `running`: that call had not
   * finished, and this error failed it.
   */
  | { t: 'stray'; kind: 'uncaught_exception' | 'unhandled_rejection'; error: string; id?: number; handler?: string; running: boolean };

/** The pod client's calls a thread may ask for (`pages` is walked in the thread, page by page). */
export type PodsOperationName = 'list' | 'queueAction' | 'actions' | 'lastResult' | 'mintKey' | 'chatTicket';

/** A call's error as it crosses: enough to make the same `PodsError` (or `PodsRateLimited`) again. */
export interface PodsErrorData {
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
