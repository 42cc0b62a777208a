// ctx.waitForEvent (docs/handlers.md, "Waiting for another event"): a run parked until a later
// delivery about the same pod arrives, or its timeout passes. The run's side is a durable step
// (../steps/wait-for-event.ts); this room is the receiver's: the waits kept in the store, each
// new delivery matched against them, the parked runs it wakes.
export { createEventWaits, type EventWaits, type EventWaitsOptions, type WaitOutcome } from './event-waits.js';
export { storeSteps, type StoreStepsOptions } from './store-steps.js';
export { createWaitMetrics } from './wait-metrics.js';
export { createWaitersFlag, type WaitersFlag } from './waiters-flag.js';
export type { EventWaitStore, WaitCandidate, WaitRow } from './wait-store.js';
export { waitedEvent, type WaitAnswer, type WaitAsk, type WaitedEvent, type WaitedRecord } from './waited-event.js';
