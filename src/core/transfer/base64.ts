/**
 * Standard base64 (RFC 4648 §4, padded) with what every runtime has (`TextDecoder`, `atob`);
 * Node's `Buffer` is not available to the core.
 */

const ALPHABET_CODES = new TextEncoder().encode('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/');
const PAD = 0x3d; // '='
const ascii = new TextDecoder();
// A length that is a multiple of 4, with at most two '=' at its end, is the padded form. Checked
// without a repeated group: V8 backtracks `(?:…{4})*` by recursion and overflows the stack on
// about 3.3 MB of text, well under the 22 MB of a 16 MiB body.
const ALPHABET = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * Encodes bytes as padded standard base64. Each 3 bytes become 4 ASCII codes in one array, read
 * as text once (a binary string built chunk by chunk for `btoa` was slow on large bodies).
 */
export function bytesToBase64(bytes: Uint8Array): string {
  const length = bytes.length;
  const whole = length - (length % 3);
  const out = new Uint8Array(Math.ceil(length / 3) * 4);
  let o = 0;
  for (let i = 0; i < whole; i += 3) {
    const v = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!;
    out[o] = ALPHABET_CODES[v >> 18]!;
    out[o + 1] = ALPHABET_CODES[(v >> 12) & 63]!;
    out[o + 2] = ALPHABET_CODES[(v >> 6) & 63]!;
    out[o + 3] = ALPHABET_CODES[v & 63]!;
    o += 4;
  }
  const rest = length - whole;
  if (rest > 0) {
    const v = (bytes[whole]! << 16) | (rest === 2 ? bytes[whole + 1]! << 8 : 0);
    out[o] = ALPHABET_CODES[v >> 18]!;
    out[o + 1] = ALPHABET_CODES[(v >> 12) & 63]!;
    out[o + 2] = rest === 2 ? ALPHABET_CODES[(v >> 6) & 63]! : PAD;
    out[o + 3] = PAD;
  }
  return ascii.decode(out);
}

/** Decodes padded standard base64; throws a TypeError on anything else (whitespace, URL alphabet, bad padding). */
export function base64ToBytes(text: string): Uint8Array {
  if (text.length % 4 !== 0 || !ALPHABET.test(text)) throw new TypeError('not padded standard base64');
  const binary = atob(text);
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}
