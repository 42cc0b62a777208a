/**
 * Parser for `x-svc-signature: t=<unix seconds>,v1=<64 hex>[,v1=...]` (spec: Events, Delivery
 * headers). Pure and total: it never throws, it returns either the parsed header or a reason.
 */

export interface ParsedSignatureHeader {
  /** The raw `t` string, exactly as sent: it is part of the signed content. */
  readonly t: string;
  /** `t` as a number of seconds. */
  readonly timestamp: number;
  /** Every `v1` MAC, decoded to 32 bytes. Any one that matches passes. */
  readonly signatures: readonly Uint8Array[];
}

export type SignatureHeaderResult =
  | { ok: true; value: ParsedSignatureHeader }
  | { ok: false; reason: SignatureHeaderError };

export type SignatureHeaderError =
  | 'empty'
  | 'too_long'
  | 'bad_item'
  | 'missing_timestamp'
  | 'repeated_timestamp'
  | 'bad_timestamp'
  | 'no_v1_signature'
  | 'bad_v1_signature'
  | 'too_many_items';

/** Longest header accepted: 16 items of 64 hex and a timestamp fit well inside it. */
export const MAX_SIGNATURE_HEADER_LENGTH = 2048;
const MAX_ITEMS = 16;
/** A plain positive integer: digits only, no sign, no leading zero, within 2^53. */
const TIMESTAMP = /^[1-9][0-9]{0,14}$/;
const HEX64 = /^[0-9a-fA-F]{64}$/;
const SCHEME = /^[A-Za-z][A-Za-z0-9_-]{0,31}$/;

/** Parses a signature header; unknown schemes are skipped, but at least one `v1` is required. */
export function parseSignatureHeader(header: string | null | undefined): SignatureHeaderResult {
  if (header == null || header.trim() === '') return fail('empty');
  if (header.length > MAX_SIGNATURE_HEADER_LENGTH) return fail('too_long');
  const items = header.split(',');
  if (items.length > MAX_ITEMS) return fail('too_many_items');

  let t: string | undefined;
  const signatures: Uint8Array[] = [];
  for (const raw of items) {
    const item = raw.trim();
    const eq = item.indexOf('=');
    if (eq <= 0) return fail('bad_item');
    const key = item.slice(0, eq);
    const value = item.slice(eq + 1);
    if (!SCHEME.test(key)) return fail('bad_item');
    if (key === 't') {
      if (t !== undefined) return fail('repeated_timestamp');
      if (!TIMESTAMP.test(value)) return fail('bad_timestamp');
      t = value;
    } else if (key === 'v1') {
      if (!HEX64.test(value)) return fail('bad_v1_signature');
      signatures.push(hexToBytes(value));
    }
    // Other schemes (a future v2, say) are ignored, as Stripe and standard-webhooks do.
  }
  if (t === undefined) return fail('missing_timestamp');
  if (signatures.length === 0) return fail('no_v1_signature');
  return { ok: true, value: { t, timestamp: Number(t), signatures } };
}

function fail(reason: SignatureHeaderError): SignatureHeaderResult {
  return { ok: false, reason };
}

/** Decodes validated hex (even length, hex digits only) to bytes. */
export function hexToBytes(hex: string): Uint8Array {
  const out = new Uint8Array(hex.length >> 1);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.substr(i * 2, 2), 16);
  return out;
}

/** Lower-case hex of bytes. */
export function bytesToHex(bytes: Uint8Array): string {
  let s = '';
  for (let i = 0; i < bytes.length; i++) s += bytes[i]!.toString(16).padStart(2, '0');
  return s;
}
