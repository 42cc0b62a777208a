import type { HandlerDefinition, PodEvent } from '../events/define-handler.js';
import type { EventType } from '../events/event-types.js';
import { ConfigError } from '../errors.js';
import { patternMatches } from '../dispatch/router.js';
import type { EventFields, PayloadFields } from '../events/payload-types.js';
import { fieldAt } from '../shapes/payload-fields.js';
import type { OrderTime } from './order-types.js';
import { EVENT_TYPES } from '../events/event-types.js';

/** A handler's order, ready to compute: the key and time of an event, and what to do with a stale one. */
export interface OrderSpec {
  /** The entity's key, or null when the event is not ordered. */
  key(event: PodEvent<EventType, unknown>): string | null;
  /** When the event happened (epoch ms); the receipt time when `at` gives nothing. */
  at(event: PodEvent<EventType, unknown>): number;
  stale: 'run' | 'skip';
}

/** The fields a project names once for `order: 'pod'` (handlers/index.ts: `export const orderFields`), as dot paths. */
export interface OrderFieldNames {
  podId: string;
  /** null: the receipt time stands in. */
  occurredAt: string | null;
}

/** An RFC 3339 string, a Date or epoch milliseconds as epoch milliseconds; null when it is none of them. */
export function toEpochMs(value: OrderTime | unknown): number | null {
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.getTime();
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  if (typeof value === 'string' && value !== '') {
    const ms = Date.parse(value);
    return Number.isNaN(ms) ? null : ms;
  }
  return null;
}

/** A key as stored: numbers as their decimal text; nothing, an empty string or another type: not ordered. */
function keyText(value: unknown): string | null {
  if (typeof value === 'string') return value === '' ? null : value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return null;
}

/**
 * The order of each ordered handler, by handler name. `order: 'pod'` reads the fields the project
 * names (`names`) or else the learned ones (`fields`); a handler whose types lack them stops the
 * start with a `ConfigError` naming what to set.
 */
export function resolveOrderSpecs(
  handlers: readonly HandlerDefinition[],
  { fields, names }: { fields?: PayloadFields; names?: OrderFieldNames } = {},
): Map<string, OrderSpec> {
  const specs = new Map<string, OrderSpec>();
  for (const h of handlers) {
    const order = h.order;
    if (order === undefined) continue;
    if (order !== 'pod') {
      specs.set(h.name, {
        key: (event) => keyText(order.key(event)),
        at: order.at ? (event) => toEpochMs(order.at!(event)) ?? event.receivedAt.getTime() : (event) => event.receivedAt.getTime(),
        stale: order.stale ?? 'run',
      });
      continue;
    }
    const types = EVENT_TYPES.filter((t) => patternMatches(h.pattern, t));
    const perType = new Map<string, EventFields>();
    const missing: string[] = [];
    for (const type of types) {
      const found: EventFields = names
        ? { podId: names.podId.split('.'), occurredAt: names.occurredAt === null ? undefined : names.occurredAt.split('.') }
        : (fields?.[type] ?? {});
      if (!found.podId || (!names && !found.occurredAt)) missing.push(type);
      perType.set(type, found);
    }
    if (missing.length > 0) {
      throw new ConfigError(
        `handler ${h.name}: order: 'pod' needs the pod id and event time fields of ${missing.join(', ')}, and none were learned: ` +
          "run `podhook schemas` on real deliveries, or name them once in handlers/index.ts: export const orderFields = { podId: 'pod.id', occurredAt: 'occurred_at' } (occurredAt: null uses the receipt time)",
      );
    }
    specs.set(h.name, {
      key: (event) => keyText(fieldAt(event.payload, perType.get(event.type)?.podId ?? [])),
      at: (event) => {
        const path = perType.get(event.type)?.occurredAt;
        return (path ? toEpochMs(fieldAt(event.payload, path)) : null) ?? event.receivedAt.getTime();
      },
      stale: 'run',
    });
  }
  return specs;
}
