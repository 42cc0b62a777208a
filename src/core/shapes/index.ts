// Payload shapes learned from stored deliveries (`podhook schemas`): infer, generate, check,
// JSON Schema. Pure TypeScript on Web APIs, so the Worker can use it too.
export { describeShape, JSON_TYPES, PAYLOAD_SHAPES_FORMAT, PayloadShapesSchema, type JsonType, type PayloadShapes, type Shape, type StringFormat, type TypeShape } from './shape.js';
export { isDateTime, isUuid } from './string-format.js';
export { EVERY_VALUE, LOW_CARDINALITY, MAX_VALUE_LENGTH, TRACKED_VALUES, type LowCardinalityRule } from './low-cardinality.js';
export { MAX_DEPTH, MAX_PROPERTIES } from './_shape-node.js';
export { createShapeInference, inferShapes, type PayloadSample, type ShapeInference } from './infer-shapes.js';
export { deliverySample, type SkipReason } from './delivery-sample.js';
export { buildSchema, isInheritedName, shapeToZod, zodTarget, type SchemaTarget } from './build-schema.js';
export { shapeToZodSource, zodSourceTarget } from './zod-source.js';
export { shapeToTypeSource } from './type-source.js';
export { generatePayloadModule, PAYLOAD_MODULE_PATH, payloadSchemaName, payloadTypeName } from './generate-module.js';
export { PayloadModuleError, readPayloadModule } from './read-module.js';
export { compileFit, type FitCheck } from './compile-fit.js';
export { createDriftWatch, type DriftWatch, type DriftWatchOptions } from './drift-watch.js';
export { driftCheckFor, MAX_DRIFT_DIFFERENCES, MAX_DRIFT_PATH, type DriftCheck, type DriftDifference } from './payload-drift.js';
export { checkShapes, formatDifference, type DifferenceKind, type ShapeDifference } from './check-shapes.js';
export { fieldAt, findEventFields, findPayloadFields, OCCURRED_AT_KEYS, POD_ID_PATHS } from './payload-fields.js';
export { samplePayload, type SamplePayloadOptions } from './sample-payload.js';
export { JSON_SCHEMA_DIALECT, shapesToJsonSchema, shapeToJsonSchema, type JsonSchema } from './json-schema.js';
