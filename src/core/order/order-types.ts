
/** When an event happened, as an `order.at` function may give it: a Date, an RFC 3339 string or epoch milliseconds. */
export type OrderTime = Date | string | number | null | undefined;

/**
 * A handler's per-entity order: `key` names the entity (the pod), `at` says when the event
 * happened. Where `at` gives nothing, the delivery's first receipt time stands in (a retried
 * delivery then looks late).
 */
export interface OrderOptions<E> {
  /** The entity's key; `undefined` or `null`: this event is not ordered. */
  key: (event: E) => string | number | null | undefined;
  /** When the event happened (default: when podhook first received it). */
  at?: (event: E) => OrderTime;
  /**
   * A stale event (its `at` is earlier than the newest one already run for its key): `run` runs it
   * with `order.stale === true` (the default); `skip` does not run it and records it `skipped`.
   */
  stale?: 'run' | 'skip';
}

/**
 * `order: 'pod'`: the pod id and event time that `podhook schemas` found in the payloads
 * (`payloadFields` of handlers/_payloads.ts), or that the project names once (`orderFields` of
 * handlers/index.ts).
 */
export type OrderOption<E> = OrderOptions<E> | 'pod';

/** What an ordered handler's context says about this run. */
export interface OrderContext {
  /** The entity's key, or null when this event is not ordered (its `key` gave nothing). */
  key: string | null;
  /** When the event happened (or was first received). */
  at: Date;
  /** A newer event for this key already ran. */
  stale: boolean;
  /** The newest event already run for this key, when this run is stale. */
  newest?: { eventId: string; at: Date };
}
