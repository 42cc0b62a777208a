import { z } from 'zod';
import type { EventType } from './event-types.js';
import type { LearnedPayload } from './payload-types.js';

/**
 * One zod schema per event type. The service does not publish payload shapes (spec: Events,
 * "Payload shape of deliveries: not shown"), so each is permissive: a JSON object, unknown
 * keys kept. Tighten one in your handler module with `schema: EVENT_SCHEMAS['pod.created'].extend({...})`.
 */
export const EVENT_SCHEMAS = {
  'pod.created': z.looseObject({}),
  'pod.active': z.looseObject({}),
  'pod.destroyed': z.looseObject({}),
  'pod.destroy_failed': z.looseObject({}),
  'pod.action.queued': z.looseObject({}),
  'pod.status.changed': z.looseObject({}),
  'pod.renewed': z.looseObject({}),
  'pod.renewal_failed': z.looseObject({}),
  'pod.expiring': z.looseObject({}),
  'pod.backup.completed': z.looseObject({}),
  'pod.backup.failed': z.looseObject({}),
} satisfies Record<EventType, z.ZodType<Record<string, unknown>>>;

/**
 * The payload type handlers see for one event type: the type \`podhook schemas\` learned for it when
 * the generated module (handlers/_payloads.ts) is part of the program, else any JSON object, as
 * its permissive schema here parses it.
 */
export type EventPayload<T extends EventType> = LearnedPayload<T>;
