/** Two ASCII hex digits per byte value. */
const DIGITS = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, '0'));
const HIGH = Uint8Array.from(DIGITS, (d) => d.charCodeAt(0));
const LOW = Uint8Array.from(DIGITS, (d) => d.charCodeAt(1));
const decoder = new TextDecoder();

/** Bytes as lower-case hex text (what SQLite's `unhex()` decodes), written as ASCII and decoded once. */
export function bytesToHex(bytes: Uint8Array): string {
  const out = new Uint8Array(bytes.length * 2);
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    out[2 * i] = HIGH[b]!;
    out[2 * i + 1] = LOW[b]!;
  }
  return decoder.decode(out);
}
