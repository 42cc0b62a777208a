/**
 * The 11 pod event types the service delivers (spec: Events). The tuple is the single
 * source of truth: the union type, the CLI's validation and the handler registry derive from it.
 */
export const EVENT_TYPES = [
  'pod.created',
  'pod.active',
  'pod.destroyed',
  'pod.destroy_failed',
  'pod.action.queued',
  'pod.status.changed',
  'pod.renewed',
  'pod.renewal_failed',
  'pod.expiring',
  'pod.backup.completed',
  'pod.backup.failed',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

const KNOWN = new Set<string>(EVENT_TYPES);

/** True when `type` is one of the 11 published event types. */
export function isEventType(type: string): type is EventType {
  return KNOWN.has(type);
}
