import { EVENT_ID_HEADER, EVENT_TYPE_HEADER, SIGNATURE_HEADER } from '../ingest/receive-delivery.js';
import type { SignatureCrypto } from './signature-crypto.js';
import { bytesToHex } from './signature-header.js';

export interface SignDeliveryOptions {
  crypto: SignatureCrypto;
  secret: string;
  eventId: string;
  eventType: string;
  /** The raw body bytes, signed and sent exactly as they are. */
  body: Uint8Array;
  /** The signature timestamp, in Unix seconds (a fresh one: receivers refuse a `t` outside ±300 s). */
  t: number;
}

/**
 * The `x-svc-signature` value the service sends: `t=<unix>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">`
 * (spec: Events, Delivery headers).
 *
 * @example
 * await signatureHeader(crypto, secret, 1790000000, body); // 't=1790000000,v1=5f0c…'
 */
export async function signatureHeader(crypto: SignatureCrypto, secret: string, t: number, body: Uint8Array): Promise<string> {
  if (!Number.isSafeInteger(t) || t <= 0) throw new RangeError(`the signature timestamp must be a positive whole number of seconds (got ${t})`);
  return `t=${t},v1=${bytesToHex(await crypto.hmac(secret, String(t), body))}`;
}

/** The three headers of a delivery as the service signs it: signature, event type, event id. */
export async function signDeliveryHeaders({ crypto, secret, eventId, eventType, body, t }: SignDeliveryOptions): Promise<Record<string, string>> {
  return {
    [SIGNATURE_HEADER]: await signatureHeader(crypto, secret, t, body),
    [EVENT_TYPE_HEADER]: eventType,
    [EVENT_ID_HEADER]: eventId,
  };
}
