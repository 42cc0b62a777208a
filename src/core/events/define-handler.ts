import type { z } from 'zod';
import type { EventPayload } from './event-schemas.js';
import type { EventType } from './event-types.js';
import type { Logger } from '../observability/logger.js';

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

export interface HandlerContext {
  /** A child logger bound to the event id, type, handler and attempt. */
  log: Logger;
  /** Aborted when the handler's time limit is reached: pass it to fetch() and friends. */
  signal: AbortSignal;
}

export interface HandlerOptions<S extends z.ZodType<Record<string, unknown>> | undefined = undefined> {
  /** Stable name, recorded in the per-handler ledger. Default: the function's name, else the pattern. */
  name?: string;
  /** A stricter payload schema; a payload that fails it makes the delivery `dead`, with the error. */
  schema?: S;
  /** Time limit per call, in ms (default: the dispatcher's). */
  timeoutMs?: number;
}

/** A registered handler, as the router and dispatcher see it. */
export interface HandlerDefinition<P extends EventPattern = EventPattern> {
  readonly pattern: P;
  readonly name: string;
  readonly schema?: z.ZodType<Record<string, unknown>>;
  readonly timeoutMs?: number;
  readonly handle: (event: PodEvent<EventType, unknown>, ctx: HandlerContext) => unknown;
}

type HandleFn<P extends EventPattern, Payload> = (event: PodEventOf<MatchingTypes<P>, Payload>, ctx: HandlerContext) => unknown;

/**
 * Defines a handler for one event type or a wildcard; the pattern narrows what it sees.
 *
 * @example
 * export default defineHandler('pod.backup.failed', async (event, { log }) => {
 *   log.warn({ pod_id: event.payload.pod_id }, 'backup failed');
 * });
 * export const strict = defineHandler('pod.created', { name: 'welcome', schema }, async (event) => {});
 */
export function defineHandler<P extends EventPattern>(pattern: P, handle: HandleFn<P, undefined>): HandlerDefinition<P>;
export function defineHandler<P extends EventPattern, S extends z.ZodType<Record<string, unknown>> | undefined = undefined>(
  pattern: P,
  options: HandlerOptions<S>,
  handle: HandleFn<P, S extends z.ZodType ? z.infer<S> : undefined>,
): HandlerDefinition<P>;
export function defineHandler(
  pattern: EventPattern,
  optionsOrHandle: HandlerOptions<z.ZodType<Record<string, unknown>>> | HandleFn<EventPattern, undefined>,
  maybeHandle?: HandleFn<EventPattern, unknown>,
): HandlerDefinition {
  const options = typeof optionsOrHandle === 'function' ? {} : optionsOrHandle;
  const handle = (typeof optionsOrHandle === 'function' ? optionsOrHandle : maybeHandle) as HandlerDefinition['handle'];
  if (typeof handle !== 'function') throw new TypeError(`defineHandler('${pattern}'): the handler must be a function`);
  return Object.freeze({
    pattern,
    name: options.name ?? (handle.name || pattern),
    schema: options.schema,
    timeoutMs: options.timeoutMs,
    handle,
    [DEFINED]: true,
  });
}

/** Whether a value was made by `defineHandler` (the registry check and `podhook handlers` ask). */
export function isDefinedHandler(value: unknown): value is HandlerDefinition {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[DEFINED] === true;
}
