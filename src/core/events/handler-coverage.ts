import type { HandlerDefinition } from './define-handler.js';
import { EVENT_TYPES, type EventType } from './event-types.js';
import { patternMatches } from '../dispatch/router.js';
import type { StoredSecret } from '../delivery-store.js';
import type { PayloadShapes } from '../shapes/shape.js';

/** What `podhook handlers --json` prints: the registry, then each type with its handlers and subscription. */
export interface HandlerCoverage {
  handlers: { name: string; pattern: string; types: EventType[] }[];
  /**
   * `subscribed` is null when no webhook stored by `podhook register` says what it receives;
   * `samples`, how many payloads its learned shape came from (null: the registry exports none for it).
   */
  types: { type: EventType; handlers: string[]; subscribed: boolean | null; samples: number | null }[];
}

/** Which types the registered webhooks receive: null when none was stored by `podhook register`. */
export function subscribedTypes(secrets: readonly StoredSecret[]): ((type: EventType) => boolean) | null {
  const webhooks = secrets.filter((s) => s.webhookId !== null);
  if (webhooks.length === 0) return null;
  // A webhook created without event_types receives every event.
  return (type) => webhooks.some((w) => w.eventTypes === null || w.eventTypes.includes(type));
}

/** The registry as a coverage view: which handlers take which of the 11 types, whether each arrives, and whether its payload shape is learned. */
export function handlerCoverage(
  handlers: readonly HandlerDefinition[],
  subscribed: ((type: EventType) => boolean) | null,
  shapes?: PayloadShapes,
): HandlerCoverage {
  return {
    handlers: handlers.map((h) => ({ name: h.name, pattern: h.pattern, types: EVENT_TYPES.filter((t) => patternMatches(h.pattern, t)) })),
    types: EVENT_TYPES.map((type) => ({
      type,
      handlers: handlers.filter((h) => patternMatches(h.pattern, type)).map((h) => h.name),
      subscribed: subscribed ? subscribed(type) : null,
      samples: shapes !== undefined && Object.hasOwn(shapes.types, type) ? shapes.types[type]!.samples : null,
    })),
  };
}

/** A type's mismatch, if any: subscribed but unhandled (stored as ignored), or handled but never sent. */
export function coverageMismatch({ handlers, subscribed }: HandlerCoverage['types'][number]): string | null {
  if (subscribed === true && handlers.length === 0) return 'subscribed but unhandled: stored as ignored';
  if (subscribed === false && handlers.length > 0) return 'handled but not subscribed: never arrives';
  return null;
}
