// podhook/testing: the handler author's test kit. Everything here runs on Node and in workerd,
// except createTestReceiver (Node only: better-sqlite3), which loads its Node half on demand.
export { testEvent, type DeepPartial, type TestEventOverrides, type TestPayload } from './test-event.js';
export { runHandler, type RunHandlerOptions, type RunHandlerResult, type RunStepsReport } from './run-handler.js';
export { createTestSteps, type TestSteps, type TestStepsOptions } from './test-steps.js';
export { captureLogs, type LogLevel, type LogLine } from './capture-logs.js';
export { signatureHeader, signDelivery, type SignDeliveryOptions, type SignedDelivery } from './sign.js';
export { createTestReceiver } from './create-test-receiver.js';
export type { DeliveryRow, HandlerRunRow, TestReceiver, TestReceiverOptions } from './test-receiver.js';
