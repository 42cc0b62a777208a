// Helpers shared by the example handlers. The service does not publish payload shapes, so the
// examples read the fields a pod event plausibly carries and log what is there.

type Json = Record<string, unknown>;

const obj = (v: unknown): Json | undefined => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : undefined);
const str = (v: unknown): string | undefined => (typeof v === 'string' || typeof v === 'number' ? String(v) : undefined);

/** The pod the event is about: `payload.pod`, `payload.data.pod`, or top-level fields. */
export function podOf(payload: Json): Json {
  const data = obj(payload.data) ?? payload;
  return obj(data.pod) ?? obj(payload.pod) ?? data;
}

/** Pod fields worth a log line, where present: id, name, slug, status, external_ref. */
export function podFields(payload: Json): Record<string, string | undefined> {
  const pod = podOf(payload);
  return {
    pod_id: str(pod.id) ?? str(payload.pod_id),
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
