import type { z } from 'zod';
import type { HandlerDefinition } from '../events/define-handler.js';
import { countWork } from '../observability/work-count.js';

/** The schemas `podhook schemas` generated, by event type (`RegistryPayloads['schemas']`). */
export type PayloadSchemaMap = Readonly<Partial<Record<string, z.ZodType>>>;

/**
 * A payload its type's generated schema refused. A handler without a schema of its own is handed
 * this instead of the payload, and the runner ends its call `invalid_payload` (permanent: the
 * delivery becomes dead), as when a handler's own schema refuses it.
 */
export class RefusedPayload {
  constructor(readonly error: string) {}
}

/** zod's issues as one line, `pod.id: Invalid UUID; tier: Invalid input: …`, for `last_error`. */
export const describeIssues = (error: z.ZodError): string =>
  error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');

/**
 * What each handler of one dispatch attempt is given. A handler with a schema of its own gets the
 * payload as stored (the runner parses it with that schema); one without gets the payload as its
 * type's generated schema parsed it (the type its code was compiled against), or a
 * `RefusedPayload`. The generated schema parses once per attempt, when the first handler without
 * a schema asks, and every such handler shares the result. Without a generated schema for the
 * type, every handler gets the payload as stored (today's permissive behaviour).
 */
export function typedPayloads(schemas: PayloadSchemaMap | undefined, eventType: string, payloadOf: () => unknown): (handler: HandlerDefinition) => unknown {
  const schema = schemas === undefined || !Object.hasOwn(schemas, eventType) ? undefined : schemas[eventType];
  if (schema === undefined) return payloadOf;
  let parsed: { value: unknown } | undefined;
  return (handler) => {
    if (handler.schema) return payloadOf();
    if (parsed === undefined) {
      countWork('schema_run');
      const check = schema.safeParse(payloadOf());
      parsed = {
        value: check.success
          ? check.data
          : new RefusedPayload(`invalid_payload: the payload does not fit the ${eventType} schema podhook schemas learned: ${describeIssues(check.error)}`),
      };
    }
    return parsed.value;
  };
}
