// Ordered handlers (docs/handlers.md, "Ordered handlers"): one run per key at a time, earliest `at`
// first, stale events run with `order.stale` or skipped. To dispatch, the order is one attempt gate
// (`createOrderGate`); at ingest, a new delivery's places in its keys (`Ordering.entriesFor`).
export { createOrderGate, recheckAfter, type OrderGateOptions } from './order-gate.js';
export { createOrdering, type Ordering, type OrderingOptions } from './ordering.js';
export { resolveOrderSpecs, type OrderFieldNames, type OrderSpec } from './order-spec.js';
export type { OrderContext, OrderOption, OrderOptions, OrderTime } from './order-types.js';
export { readOrderWaits } from './waiting-on.js';
