/** The service's rule for request ids (spec: Limits, "Request id"): 8 to 64 of `A-Za-z0-9._-`. */
export const REQUEST_ID_PATTERN = /^[A-Za-z0-9._-]{8,64}$/;

/** A fresh id for one call to the service (45 characters). */
export const newRequestId = (): string => `podhook-${crypto.randomUUID()}`;

/**
 * The id page `page` (1-based) of one listing sends: the caller's id for the first page, then the
 * id with `.<page>` (shortened to stay within 64), so a repeated walk sends the same ids again.
 */
export function pageRequestId(id: string, page: number): string {
  if (page <= 1) return id;
  const suffix = `.${page}`;
  return `${id.slice(0, 64 - suffix.length)}${suffix}`;
}
