import { InvalidRequestError, PayloadTooLargeError } from '../core/errors.js';
import { readCapped } from '../core/read-capped.js';

/**
 * Reads the raw body bytes with a cap, checked while reading: a declared `Content-Length` over
 * the cap is refused before any byte is read; a chunked body is counted as it streams and
 * abandoned at the cap. Returns the exact bytes sent (never re-serialised: the MAC covers them).
 *
 * Hono's `bodyLimit` does the same but touches `request.body`, which makes @hono/node-server
 * build a full Web stream for every request; `arrayBuffer()` keeps its direct fast path.
 */
export async function readBodyCapped(request: Request, maxBytes: number): Promise<Uint8Array> {
  if (checkDeclaredLength(request.headers.get('content-length'), request.headers.has('transfer-encoding'), maxBytes)) {
    return new Uint8Array(await request.arrayBuffer());
  }
  const bytes = await readCapped(request.body, maxBytes);
  if (bytes === null) throw new PayloadTooLargeError(maxBytes);
  return bytes;
}

/**
 * The check made before any body byte is read (Web and Node readers alike): a `Content-Length`
 * (without `Transfer-Encoding`) must be digits and within the cap. Returns whether the length
 * was declared, i.e. whether the reader may trust it instead of counting.
 */
export function checkDeclaredLength(declared: string | null | undefined, chunked: boolean, maxBytes: number): boolean {
  if (declared == null || chunked) return false;
  if (!/^\d{1,15}$/.test(declared)) throw new InvalidRequestError('Invalid Content-Length header.', 'bad_content_length');
  if (Number(declared) > maxBytes) throw new PayloadTooLargeError(maxBytes);
  return true;
}
