import type { Delivery } from '../delivery.js';
import type { HandlerContext, HandlerDefinition } from '../events/define-handler.js';
import type { HandlerResult } from '../dispatch/handler-result.js';

/** What a gate adds to a handler's context for one run, beside `log` and `signal` (an ordered handler's `order`). */
export type GateContext = Omit<Partial<HandlerContext>, 'log' | 'signal'>;

/** One handler of a job: which, its run number, what the attempt's gate adds to its context. */
export interface HandlerCall {
  handler: HandlerDefinition;
  /** This handler's run number for the event: 1 on its first run. */
  attempt: number;
  context?: GateContext;
}

/** What a job needs of its delivery: its identity, times and body (no headers, no lease). */
export type JobDelivery = Pick<Delivery, 'eventId' | 'eventType' | 'signatureT' | 'receivedAt' | 'body'>;

/**
 * Wraps one call of a job (an instrument's span, active while the handler's code runs): calls
 * `run` once, synchronously, and gives back what it resolves with.
 */
export type CallWrapper = (call: HandlerCall, delivery: JobDelivery, run: () => Promise<HandlerResult>) => Promise<HandlerResult>;

/** One delivery's handler calls for one attempt, handed to a runner at once. */
export interface HandlerJob {
  delivery: JobDelivery;
  /** The body as ingest parsed it, when it is at hand (a hand-off): a runner in this thread parses nothing then. */
  parsed?: unknown;
  calls: readonly HandlerCall[];
  /** The claim the attempt holds the delivery under: a durable step is recorded only while it does. */
  claimId: string;
  wrap?: CallWrapper;
}

/**
 * How a job ended: a result per call, in the calls' order, or the body could not be parsed (not
 * UTF-8 JSON: the delivery is dead, whichever runner found it, and no handler ran).
 */
export type JobResult = { results: HandlerResult[]; invalidBody?: undefined } | { invalidBody: string; results?: undefined };

/**
 * Where handler code runs: in this thread (`createInThisThreadRunner`) or in a pool of threads
 * (Node's `createThreadRunner`). Both run a job with the same core (`createJobRunner`): the body
 * parsed once, its type's generated schema run once, each call's schema, time limit, signal,
 * context, durable steps and `ctx.pods`. What comes back is raw: the receiver redacts errors and
 * writes the `handler run` lines.
 */
export interface HandlerRunner {
  /**
   * The runner parses the body where it runs the handlers (a thread of its own): a parse made on
   * this thread (ingest's) is not kept for it, so no object outlives the run here.
   */
  readonly readsBody?: boolean;
  /** Runs one delivery's calls; never throws. */
  run(job: HandlerJob): Promise<JobResult>;
  /** Aborts every call still running (shutdown); each settles at once as `interrupted`. */
  abortAll(reason: Error): void;
  /** Aborts the calls still running for one delivery (its lease was lost), as `abortAll` does. */
  abortDelivery(eventId: string, reason: Error): void;
}
