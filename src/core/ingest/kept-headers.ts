/**
 * The request headers kept with a stored delivery (and exported): an allowlist, since a proxy or
 * client in front of the receiver may add credentials under any name.
 */
export const KEPT_HEADERS: ReadonlySet<string> = new Set([
  'content-type',
  'content-length',
  'user-agent',
  'x-svc-event-type',
  'x-svc-event-id',
  'x-request-id',
]);

/** Only the allowlisted headers of a stored or exported set. */
export function keptHeaders(headers: Record<string, string>): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    const key = name.toLowerCase();
    if (KEPT_HEADERS.has(key)) kept[key] = value;
  }
  return kept;
}
