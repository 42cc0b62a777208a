import type { EventPattern, HandlerDefinition } from '../events/define-handler.js';

/** Whether a pattern (`pod.created`, `pod.backup.*`, `*`) matches an event type. */
export function patternMatches(pattern: EventPattern, type: string): boolean {
  if (pattern === '*') return true;
  if (pattern.endsWith('.*')) return type.startsWith(pattern.slice(0, -1));
  return pattern === type;
}

export interface Router {
  readonly handlers: readonly HandlerDefinition[];
  /** The handlers for one event type, in registration order. */
  handlersFor(type: string): readonly HandlerDefinition[];
}

/**
 * Builds the router from an explicit list of handlers (no directory scanning, so bundlers can
 * follow it into the edge worker). Names must be unique: they key the per-handler ledger.
 */
export function createRouter(handlers: readonly HandlerDefinition[]): Router {
  const seen = new Set<string>();
  for (const h of handlers) {
    if (seen.has(h.name)) {
      throw new Error(`two handlers are named "${h.name}": give each a unique name (defineHandler(pattern, { name }, fn))`);
    }
    seen.add(h.name);
  }
  const cache = new Map<string, readonly HandlerDefinition[]>();
  return {
    handlers,
    handlersFor(type) {
      let list = cache.get(type);
      if (!list) {
        list = handlers.filter((h) => patternMatches(h.pattern, type));
        cache.set(type, list);
      }
      return list;
    },
  };
}
