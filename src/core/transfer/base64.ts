/**
 * Standard base64 (RFC 4648 §4, padded) over `btoa`/`atob`, which every runtime has; Node's
 * `Buffer` is not available to the core. Bytes pass through a binary string (one char per byte).
 */

const CHUNK = 0x8000;
// A length that is a multiple of 4, with at most two '=' at its end, is the padded form. Checked
// without a repeated group: V8 backtracks `(?:…{4})*` by recursion and overflows the stack on
// about 3.3 MB of text, well under the 22 MB of a 16 MiB body.
const ALPHABET = /^[A-Za-z0-9+/]*={0,2}$/;

/** Encodes bytes as padded standard base64. */
export function bytesToBase64(bytes: Uint8Array): string {
  let binary = '';
  // Chunked: spreading a large array into fromCharCode overflows the call stack.
  for (let i = 0; i < bytes.length; i += CHUNK) binary += String.fromCharCode(...bytes.subarray(i, i + CHUNK));
  return btoa(binary);
}

/** Decodes padded standard base64; throws a TypeError on anything else (whitespace, URL alphabet, bad padding). */
export function base64ToBytes(text: string): Uint8Array {
  if (text.length % 4 !== 0 || !ALPHABET.test(text)) throw new TypeError('not padded standard base64');
  const binary = atob(text);
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}
