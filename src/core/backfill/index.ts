// Backfills (docs/architecture.md, "Backfills ride the dispatcher"): a handler added late run on
// stored history. The store is the channel: a start writes a row; whichever dispatching receiver
// holds its lease requeues its deliveries a page per step for its own dispatcher.
export { scheduleBackfills, type BackfillScheduler } from './backfill-scheduler.js';
export { BACKFILL_PAGE, createBackfillStepper, type BackfillStepper, type BackfillStepperOptions, type BackfillStepResult } from './backfill-stepper.js';
export type { Backfill, BackfillCursor, BackfillSelection, BackfillState, BackfillStore } from './backfill-store.js';
export { backfillPlanJson, firstSeen, planBackfill, startBackfill, typesOf, MAX_RATE, type BackfillPlan, type BackfillRequest } from './start-backfill.js';
