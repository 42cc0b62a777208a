/**
 * A step's idempotency key: the same in every run of that step of that handler for that delivery
 * (its name, its occurrence of that name in the run, and the run's generation: a fresh run,
 * `replay --fresh` or a backfill, starts a new one), different for any other, and a valid
 * `x-request-id` (8 to 64 of `A-Za-z0-9._-`) as it is: `st_` and 40 hex digits of SHA-256.
 */
export async function stepIdempotencyKey(eventId: string, handler: string, name: string, occurrence = 1, generation = ''): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(`${eventId}\u0000${handler}\u0000${name}\u0000${occurrence}\u0000${generation}`));
  let hex = '';
  for (const b of new Uint8Array(digest).subarray(0, 20)) hex += b.toString(16).padStart(2, '0');
  return `st_${hex}`;
}
