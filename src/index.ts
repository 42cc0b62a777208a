// podhook's public surface: what handler modules and embedding code import.
export { EVENT_TYPES, isEventType, type EventType } from './core/events/event-types.js';
export { EVENT_SCHEMAS, type EventPayload } from './core/events/event-schemas.js';
export {
  defineHandler,
  type EventPattern,
  type HandlerContext,
  type HandlerDefinition,
  type HandlerOptions,
  type MatchingTypes,
  type PodEvent,
  type PodEventOf,
} from './core/events/define-handler.js';
export { createRouter, patternMatches, type Router } from './core/dispatch/router.js';
export { createDispatcher, type Dispatcher, type DispatcherOptions } from './core/dispatch/dispatcher.js';
export { createReceiver, type ReceiveDelivery } from './core/ingest/receive-delivery.js';
export { createApp, type AppOptions } from './http/create-app.js';
export type { Delivery, DeliveryStatus, DeliveryStore } from './core/delivery-store.js';
export type { Logger } from './core/observability/logger.js';
export * from './core/errors.js';
