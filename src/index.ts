// podhook's public surface: what handler modules and embedding code import.
export { EVENT_TYPES, isEventType, type EventType } from './core/event-types.js';
export { EVENT_SCHEMAS, type EventPayload } from './core/event-schemas.js';
export {
  defineHandler,
  type EventPattern,
  type HandlerContext,
  type HandlerDefinition,
  type HandlerOptions,
  type MatchingTypes,
  type PodEvent,
  type PodEventOf,
} from './core/define-handler.js';
export { createRouter, patternMatches, type Router } from './core/router.js';
export { createDispatcher, type Dispatcher, type DispatcherOptions } from './core/dispatcher.js';
export { createReceiver, type ReceiveDelivery } from './core/receive-delivery.js';
export { createApp, type AppOptions } from './http/create-app.js';
export type { Delivery, DeliveryStatus, DeliveryStore } from './core/delivery-store.js';
export type { Logger } from './core/logger.js';
export * from './core/errors.js';
