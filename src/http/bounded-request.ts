import type { Context } from 'hono';

/** The login form: one token field (ADMIN_TOKEN is at least 32 characters; a few hundred bytes with the form's encoding). */
export const LOGIN_BODY_MAX_BYTES = 4_096;
/** Every other body under `/_podhook/`: the largest is a replay of 1,000 event ids (about 40 KB of JSON). */
export const ADMIN_BODY_MAX_BYTES = 65_536;

const NO_BODY = /^(GET|HEAD|OPTIONS)$/;

/** The cap of a `/_podhook/` route's body: the login form's own, or the admin surface's. */
export function adminBodyCap(path: string): number {
  return path === '/_podhook/login' ? LOGIN_BODY_MAX_BYTES : ADMIN_BODY_MAX_BYTES;
}

/**
 * The request with its body read by `readBody` (the runtime's `IngestSource`) under `maxBytes` (and, on Node, the shared
 * body budget), before anything else looks at it: a declared length over the cap is a 413 before
 * a byte is read, a streamed one is abandoned at the cap (the answer closes the connection), and
 * beyond MAX_INFLIGHT_BODY_BYTES it is a 503. What follows (the admin auth, hono/csrf, the forms'
 * and the API's parsers) reads the bytes kept here, so no route can read more.
 *
 * One piece with the ingest route's reader (`IngestSource`) rather than `hono/body-limit`: that
 * middleware neither knows the Node body budget nor keeps @hono/node-server's direct read.
 */
export async function withBoundedBody(c: Context, readBody: (maxBytes: number) => Promise<Uint8Array>, maxBytes: number): Promise<Request> {
  const raw = c.req.raw;
  if (NO_BODY.test(raw.method)) return raw;
  const body = await readBody(maxBytes);
  return new Request(raw.url, { method: raw.method, headers: raw.headers, body: body as Uint8Array<ArrayBuffer>, signal: raw.signal });
}
