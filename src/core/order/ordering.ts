import type { OrderEntry } from '../delivery.js';
import { eventOf, type EventSource } from '../events/event-of.js';
import type { HandlerDefinition, PodEvent } from '../events/define-handler.js';
import type { EventType } from '../events/event-types.js';
import { resolveOrderSpecs, type OrderFieldNames, type OrderSpec } from './order-spec.js';
import type { PayloadFields } from '../events/payload-types.js';

export interface OrderingOptions {
  handlers: readonly HandlerDefinition[];
  /** ORDER_HOLD_MS: deliveries received within this of each other are put in `at` order before any runs. */
  holdMs: number;
  /** The pod id and event time fields `podhook schemas` learned (`order: 'pod'`). */
  fields?: PayloadFields;
  /** Or the ones the project names once (handlers/index.ts `orderFields`). */
  names?: OrderFieldNames;
}

/** The deployment's ordered handlers: what ingest stores for a new delivery and what dispatch asks. */
export interface Ordering {
  /** Whether any handler is ordered (when none is, nothing of this runs). */
  readonly active: boolean;
  readonly holdMs: number;
  spec(handler: string): OrderSpec | undefined;
  /** A new delivery's places in its ordered handlers' keys (undefined when it has none). */
  entriesFor(delivery: EventSource, payload: unknown, handlers: readonly HandlerDefinition[]): OrderEntry[] | undefined;
}

/**
 * The ordered handlers of a deployment. Throws a `ConfigError` at start for an `order: 'pod'`
 * whose fields are not known (see `resolveOrderSpecs`).
 */
export function createOrdering({ handlers, holdMs, fields, names }: OrderingOptions): Ordering {
  const specs = resolveOrderSpecs(handlers, { fields, names });
  return {
    active: specs.size > 0,
    holdMs,
    spec: (handler) => specs.get(handler),
    entriesFor(delivery, payload, matching) {
      let entries: OrderEntry[] | undefined;
      let event: PodEvent<EventType, unknown> | undefined;
      for (const h of matching) {
        const spec = specs.get(h.name);
        if (!spec) continue;
        event ??= eventOf(delivery, payload, 1);
        try {
          const key = spec.key(event);
          if (key !== null) (entries ??= []).push({ handler: h.name, key, at: spec.at(event) });
        } catch {
          // A key or time the handler's code cannot compute here is computed again at dispatch,
          // where its error fails the run and is seen (ledger, alerts).
        }
      }
      return entries;
    },
  };
}
