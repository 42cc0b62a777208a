import { z } from 'zod';
import { PayloadShapesSchema, type PayloadShapes } from '../shapes/shape.js';
import { checkHandlerRegistry, type CheckRegistryOptions, type RegistryProblem } from './check-registry.js';
import type { HandlerDefinition } from './define-handler.js';
import { EVENT_TYPES, isEventType, type EventType } from './event-types.js';
import type { PayloadFields } from './payload-types.js';
import type { OrderFieldNames } from '../order/order-spec.js';

/**
 * What a registry module (handlers/index.ts, or `--handlers MODULE`) exports: `handlers` (or a
 * default export), and optionally what `podhook schemas` generated, passed on as is:
 * `export { payloadSchemas, PAYLOAD_SHAPES as payloadShapes, payloadFields } from './_payloads.js'`.
 */
export interface RegistryModule {
  handlers?: unknown;
  default?: unknown;
  payloadSchemas?: unknown;
  payloadShapes?: unknown;
  payloadFields?: unknown;
  /** `order: 'pod'`'s fields named once by the project: `{ podId: 'pod.id', occurredAt: 'occurred_at' | null }`. */
  orderFields?: unknown;
}

/** The generated module's exports, as the runtime takes them (`RuntimeOptions.payloads`). */
export interface RegistryPayloads {
  /** One zod schema per event type: parses each payload once per dispatch attempt for the handlers without a schema of their own. */
  schemas?: Readonly<Partial<Record<EventType, z.ZodType>>>;
  /** The learned shapes: each new delivery is checked against its type's (drift), and `trigger` and `testEvent` build payloads from them. */
  shapes?: PayloadShapes;
  /** Where each type's pod id and event time are (for per-pod ordering). */
  fields?: PayloadFields;
  /** The pod id and event time the project names once for every type (`orderFields`); wins over `fields` for `order: 'pod'`. */
  orderFields?: OrderFieldNames;
}

/** A registry module read and checked: its handlers, its payload exports, and every problem found. */
export interface CheckedRegistry {
  handlers: readonly HandlerDefinition[];
  payloads: RegistryPayloads;
  problems: RegistryProblem[];
}

const FieldPathSchema = z.array(z.string()).min(1);
const PayloadFieldsSchema = z.partialRecord(z.enum(EVENT_TYPES), z.strictObject({ podId: FieldPathSchema.optional(), occurredAt: FieldPathSchema.optional() }));

const OrderFieldsSchema = z.strictObject({
  podId: z.string().regex(/^[^.]+(\.[^.]+)*$/, 'must be a dot path such as pod.id'),
  occurredAt: z.string().regex(/^[^.]+(\.[^.]+)*$/, 'must be a dot path such as occurred_at').nullable(),
});

const isSchema = (value: unknown): value is z.ZodType =>
  typeof value === 'object' && value !== null && typeof (value as { safeParse?: unknown }).safeParse === 'function';

const issueAt = (name: string, error: z.ZodError) => {
  const issue = error.issues[0]!;
  return `${[name, ...issue.path.map(String)].join('.')}: ${issue.message}`;
};

/**
 * Reads a registry module as the runtime uses it: its handler list (`checkHandlerRegistry`) and
 * the payload exports, each checked: `payloadSchemas` an object of zod schemas keyed by event
 * types, `payloadShapes` a `podhook.shapes.v1` document, `payloadFields` key paths by event type,
 * `orderFields` the dot paths a project names for `order: 'pod'`.
 * Problems name the registry module; nothing is thrown.
 */
export function checkRegistryModule(module: RegistryModule, options: CheckRegistryOptions): CheckedRegistry {
  const list = module.handlers ?? module.default;
  const problems = checkHandlerRegistry(list, options);
  const at = (message: string) => problems.push({ module: options.registry, index: -1, message });
  const payloads: RegistryPayloads = {};

  const { payloadSchemas: schemas, payloadShapes: shapes, payloadFields: fields, orderFields } = module;
  if (schemas !== undefined) {
    if (typeof schemas !== 'object' || schemas === null || Array.isArray(schemas)) {
      at('`payloadSchemas` must be an object of zod schemas by event type (as `podhook schemas` generates it)');
    } else {
      const wrong = Object.entries(schemas).filter(([type, schema]) => !isEventType(type) || !isSchema(schema));
      for (const [type] of wrong) {
        at(isEventType(type) ? `\`payloadSchemas['${type}']\` is not a zod schema` : `\`payloadSchemas\` has "${type}", which is not one of the ${EVENT_TYPES.length} event types`);
      }
      if (wrong.length === 0) payloads.schemas = schemas as RegistryPayloads['schemas'];
    }
  }
  if (shapes !== undefined) {
    const parsed = PayloadShapesSchema.safeParse(shapes);
    // The object as exported, not zod's copy (a record's copy would turn a "__proto__" key into a prototype).
    if (parsed.success) payloads.shapes = shapes as PayloadShapes;
    else at(`${issueAt('payloadShapes', parsed.error)} (export the PAYLOAD_SHAPES that \`podhook schemas\` generated)`);
  }
  if (fields !== undefined) {
    const parsed = PayloadFieldsSchema.safeParse(fields);
    if (parsed.success) payloads.fields = fields as PayloadFields;
    else at(`${issueAt('payloadFields', parsed.error)} (export the payloadFields that \`podhook schemas\` generated)`);
  }
  if (orderFields !== undefined) {
    const parsed = OrderFieldsSchema.safeParse(orderFields);
    if (parsed.success) payloads.orderFields = parsed.data;
    else at(`${issueAt('orderFields', parsed.error)} (export const orderFields = { podId: 'pod.id', occurredAt: 'occurred_at' }; occurredAt: null uses the receipt time)`);
  }
  return { handlers: Array.isArray(list) ? (list as HandlerDefinition[]) : [], payloads, problems };
}
