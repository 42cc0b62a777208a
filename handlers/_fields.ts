// Helpers shared by the example handlers. The service does not publish payload shapes: where
// `podhook schemas` found the pod id in every sample of a type (payloadFields in _payloads.ts),
// they read the pod there; otherwise they guess as before (payload.pod, payload.data.pod, then
// the top level) and log what is there.
import { fieldAt, type EventType, type PayloadFields } from 'podhook';
import { payloadFields } from './_payloads.js';

type Json = Record<string, unknown>;

/** What the handlers pass: the event's type (to look its fields up) and payload. */
interface EventLike {
  type: EventType;
  payload: Json;
}

// Widened: a module learned from few samples may list no field for any type.
const learned: PayloadFields = payloadFields;

const obj = (v: unknown): Json | undefined => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : undefined);
const str = (v: unknown): string | undefined => (typeof v === 'string' || typeof v === 'number' ? String(v) : undefined);

/** The pod the event is about: the object holding the learned pod id (`pod.id` → `pod`), else a guess. */
export function podOf({ type, payload }: EventLike): Json {
  const at = learned[type]?.podId;
  const holder = at !== undefined && at.length > 1 && at.at(-1) === 'id' ? obj(fieldAt(payload, at.slice(0, -1))) : undefined;
  if (holder) return holder;
  const data = obj(payload.data) ?? payload;
  return obj(data.pod) ?? obj(payload.pod) ?? data;
}

/** Pod fields worth a log line, where present: id (where it was learned to be), name, slug, status, external_ref. */
export function podFields(event: EventLike): Record<string, string | undefined> {
  const pod = podOf(event);
  const at = learned[event.type]?.podId;
  return {
    pod_id: at !== undefined ? str(fieldAt(event.payload, at)) : (str(pod.id) ?? str(event.payload.pod_id)),
    pod_name: str(pod.name),
    pod_slug: str(pod.slug),
    status: str(pod.status),
    external_ref: str(pod.external_ref),
  };
}

/** A named field from the event's data (or the payload itself). */
export function field(payload: Json, name: string): string | undefined {
  return str((obj(payload.data) ?? payload)[name]) ?? str(payload[name]);
}
