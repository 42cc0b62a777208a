import type { Delivery } from '../delivery.js';
import type { HandlerContext, HandlerDefinition } from '../events/define-handler.js';
import type { HandlerResult } from './handler-result.js';

/** What a gate adds to a handler's context for one run, beside `log` and `signal` (an ordered handler's `order`). */
export type GateContext = Omit<Partial<HandlerContext>, 'log' | 'signal'>;

/** One handler call, as the dispatcher (or a replay) hands it to a runner. */
export interface HandlerCall {
  handler: HandlerDefinition;
  delivery: Delivery;
  /**
   * The payload the handler is given (its type's generated schema's parse, the body as parsed, or
   * a `RefusedPayload`), parsed when first asked: a runner that reads `delivery.body` itself
   * (`readsBody`) never asks, and nothing is parsed on this thread for it.
   */
  payload: () => unknown;
  /** This handler's run number for the event: 1 on its first run. */
  attempt: number;
  /** What the attempt's gate adds to the handler's context. */
  context?: GateContext;
  /** The claim the attempt holds the delivery under: a durable step is recorded only while it does. */
  claimId?: string;
}

/** Runs one handler call; never throws. */
export type RunHandler = (call: HandlerCall) => Promise<HandlerResult>;

/** Where handler code runs: the schema check, the time limit, the `AbortSignal`, the `handler run` line. */
export interface HandlerRunner {
  run: RunHandler;
  /**
   * The runner parses each call's `delivery.body` where it runs the handler (a thread of its own):
   * the attempt then parses the body on this thread only when its gate needs the payload.
   */
  readonly readsBody?: boolean;
  /** Aborts every call still running (shutdown); each settles at once as `interrupted`. */
  abortAll(reason: Error): void;
  /** Aborts the calls still running for one delivery (its lease was lost), as `abortAll` does. */
  abortDelivery(eventId: string, reason: Error): void;
}
