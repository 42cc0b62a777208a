// Durable steps (docs/handlers.md, "Durable steps"): a handler's side effects done once per
// delivery, and sleeps that outlive the process. Each step's result is recorded in the store
// (`handler_steps`), by its position in the run; a later run of the same handler for the same
// delivery gets it back without running it again. Pure TypeScript on Web APIs (the seal is
// AES-256-GCM through Web Crypto): the receiver's thread, handler threads and the Worker alike.
export { HandlerSteps, MAX_SLEEP_MS, type HandlerStepApi, type HandlerStepsOptions, type StepInfo, type StepOptions, type StepTally } from './handler-steps.js';
export { stepIdempotencyKey } from './idempotency-key.js';
export { createStepSeal, parseStepKey, STEP_KEY_VARIABLE, type StepSeal } from './seal.js';
export { describeRunError, isPermanent, parkRequest, RunParked, StepError, stepFailed, stepMismatch } from './step-errors.js';
export { memoryJournals, storeJournals, type StepJournal, type StepJournals } from './step-journal.js';
export type { ParkedRun, StepRecord, StepStore } from './step-record.js';
export { MAX_WAIT_MS, planWait, type PodPlaces, type WaitForEventOptions, type WaitPlan, type WaitSource } from './wait-for-event.js';
export { decodeResult, encodeResult, MAX_STEP_RESULT_BYTES } from './step-result.js';
