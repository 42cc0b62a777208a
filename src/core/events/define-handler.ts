import type { z } from 'zod';
import type { EventPayload } from './event-schemas.js';
import type { EventType } from './event-types.js';
import type { Logger } from '../observability/logger.js';
import type { OrderContext, OrderOption, OrderOptions } from '../order/order-types.js';
import type { HandlerStepApi } from '../steps/handler-steps.js';
import type { PodsClient } from '../pods/pods-client.js';

// A registered symbol, so a handler made by another copy of this module (dist/ and src/) still counts.
const DEFINED = Symbol.for('podhook.defineHandler');

/** `pod.backup.failed` → `pod` | `pod.backup` */
type Prefixes<T extends string> = T extends `${infer Head}.${infer Tail}` ? Head | `${Head}.${Prefixes<Tail>}` : never;

/** What a handler can subscribe to: one type, every type (`*`) or a prefix (`pod.backup.*`). */
export type EventPattern = EventType | '*' | `${Prefixes<EventType>}.*`;

/** The event types a pattern matches. */
export type MatchingTypes<P extends EventPattern> = P extends '*'
  ? EventType
  : P extends `${infer Prefix}.*`
    ? Extract<EventType, `${Prefix}.${string}`>
    : Extract<EventType, P>;

/**
 * What a handler receives. `id` is the idempotency key for the handler's own side effects:
 * a handler may run more than once for one event (a crash after it succeeded but before its
 * success was recorded), and events can arrive out of order.
 */
export interface PodEvent<T extends EventType = EventType, P = EventPayload<T>> {
  /** The event id (`x-svc-event-id`, lower-case uuid): use it as your idempotency key. */
  id: string;
  type: T;
  /** The signature's `t`, in Unix seconds: when the sender signed this delivery. */
  signatureTimestamp: number;
  /** When podhook first received and stored it. */
  receivedAt: Date;
  /** The body parsed by the handler's schema. */
  payload: P;
  /** The body bytes exactly as sent. */
  rawBody: Uint8Array;
  /** 1 on the first run of this handler for this event, 2 on its first retry, … */
  attempt: number;
}

/** One `PodEvent` per matched type, so `event.type` narrows `event.payload`. */
export type PodEventOf<T extends EventType, P = undefined> = T extends EventType
  ? PodEvent<T, P extends undefined ? EventPayload<T> : P>
  : never;

export interface HandlerContext extends HandlerStepApi {
  /** A child logger bound to the event id, type, handler and attempt. */
  log: Logger;
  /** Aborted when the handler's time limit is reached: pass it to fetch() and friends. */
  signal: AbortSignal;
  /**
   * The pod service (`docs/pods-client.md`), within the account's limits: inside `ctx.step` a call's
   * `x-request-id` follows the step's key; an empty bucket parks the run until it refills; a code
   * the service will refuse again (`not_found`, `forbidden`, …) makes the delivery dead.
   */
  pods: PodsClient;
  /** This run's place in its key's order (handlers defined with `order` only). */
  order?: OrderContext;
}

/** What an ordered handler receives: its context always says where the run stands in its key's order. */
export interface OrderedHandlerContext extends HandlerContext {
  order: OrderContext;
}

export interface HandlerOptions<S extends z.ZodType<Record<string, unknown>> | undefined = undefined> {
  /** Stable name, recorded in the per-handler ledger. Default: the function's name, else the pattern. */
  name?: string;
  /** A stricter payload schema; a payload that fails it makes the delivery `dead`, with the error. */
  schema?: S;
  /** Time limit per call, in ms (default: the dispatcher's). */
  timeoutMs?: number;
  /**
   * Runs this handler in order per entity (docs/handlers.md, "Ordered handlers"): one run per key
   * at a time, earliest `at` first, a stale event run with `order.stale` or skipped. `'pod'`, or
   * `{ key, at?, stale? }` as functions of the event.
   */
  order?: OrderOption<PodEvent<EventType, unknown>>;
}

/** A registered handler, as the router and dispatcher see it. */
export interface HandlerDefinition<P extends EventPattern = EventPattern> {
  readonly pattern: P;
  readonly name: string;
  readonly schema?: z.ZodType<Record<string, unknown>>;
  readonly timeoutMs?: number;
  readonly order?: OrderOption<PodEvent<EventType, unknown>>;
  readonly handle: (event: PodEvent<EventType, unknown>, ctx: HandlerContext) => unknown;
}

type HandleFn<P extends EventPattern, Payload, Ctx = HandlerContext> = (event: PodEventOf<MatchingTypes<P>, Payload>, ctx: Ctx) => unknown;
type SchemaPayload<S> = S extends z.ZodType ? z.infer<S> : undefined;
/** The options but `order`, which each signature types for itself. */
type BaseOptions<S extends z.ZodType<Record<string, unknown>> | undefined> = Omit<HandlerOptions<S>, 'order'>;

/**
 * Defines a handler for one event type or a wildcard; the pattern narrows what it sees.
 *
 * @example
 * export default defineHandler('pod.backup.failed', async (event, { log }) => {
 *   log.warn({ pod_id: event.payload.pod_id }, 'backup failed');
 * });
 * export const strict = defineHandler('pod.created', { name: 'welcome', schema }, async (event) => {});
 * export const sync = defineHandler('pod.*', { name: 'syncPod', order: 'pod' }, async (event, { order }) => {
 *   if (order.stale) return;
 * });
 */
export function defineHandler<P extends EventPattern>(pattern: P, handle: HandleFn<P, undefined>): HandlerDefinition<P>;
// Ordered handlers: one signature per form of `order` (TypeScript gives no contextual type to the
// functions of an object in a union with a string), so `key` and `at` see the typed event.
export function defineHandler<P extends EventPattern>(
  pattern: P,
  options: BaseOptions<undefined> & { schema?: undefined; order: OrderOptions<PodEventOf<MatchingTypes<P>>> },
  handle: HandleFn<P, undefined, OrderedHandlerContext>,
): HandlerDefinition<P>;
export function defineHandler<P extends EventPattern, S extends z.ZodType<Record<string, unknown>>>(
  pattern: P,
  options: BaseOptions<S> & { schema: S; order: OrderOptions<PodEventOf<MatchingTypes<P>, z.infer<S>>> },
  handle: HandleFn<P, z.infer<S>, OrderedHandlerContext>,
): HandlerDefinition<P>;
export function defineHandler<P extends EventPattern, S extends z.ZodType<Record<string, unknown>> | undefined = undefined>(
  pattern: P,
  options: BaseOptions<S> & { order: 'pod' },
  handle: HandleFn<P, SchemaPayload<S>, OrderedHandlerContext>,
): HandlerDefinition<P>;
export function defineHandler<P extends EventPattern, S extends z.ZodType<Record<string, unknown>> | undefined = undefined>(
  pattern: P,
  options: BaseOptions<S> & { order?: undefined },
  handle: HandleFn<P, SchemaPayload<S>>,
): HandlerDefinition<P>;
export function defineHandler(
  pattern: EventPattern,
  // Loose here: each overload above types what a caller may pass.
  optionsOrHandle: object | ((...args: never[]) => unknown),
  maybeHandle?: (...args: never[]) => unknown,
): HandlerDefinition {
  const options: HandlerOptions<z.ZodType<Record<string, unknown>>> = typeof optionsOrHandle === 'function' ? {} : optionsOrHandle;
  const handle = (typeof optionsOrHandle === 'function' ? optionsOrHandle : maybeHandle) as HandlerDefinition['handle'];
  if (typeof handle !== 'function') throw new TypeError(`defineHandler('${pattern}'): the handler must be a function`);
  return Object.freeze({
    pattern,
    name: options.name ?? (handle.name || pattern),
    schema: options.schema,
    timeoutMs: options.timeoutMs,
    order: checkOrder(pattern, options.order as HandlerDefinition['order']),
    handle,
    [DEFINED]: true,
  });
}

/** Whether a value was made by `defineHandler` (the registry check and `podhook handlers` ask). */
export function isDefinedHandler(value: unknown): value is HandlerDefinition {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[DEFINED] === true;
}

/** An `order` option as given, or a clear error at definition (the registry check and the start show it). */
function checkOrder(pattern: EventPattern, order: HandlerDefinition['order']): HandlerDefinition['order'] {
  if (order === undefined || order === 'pod') return order;
  if (typeof order !== 'object' || order === null || typeof order.key !== 'function') {
    throw new TypeError(`defineHandler('${pattern}'): order must be 'pod' or { key: (event) => …, at?: (event) => …, stale?: 'run' | 'skip' }`);
  }
  if (order.at !== undefined && typeof order.at !== 'function') throw new TypeError(`defineHandler('${pattern}'): order.at must be a function of the event`);
  if (order.stale !== undefined && order.stale !== 'run' && order.stale !== 'skip') {
    throw new TypeError(`defineHandler('${pattern}'): order.stale must be 'run' or 'skip'`);
  }
  return order;
}
