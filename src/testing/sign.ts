import { defaultPayload } from '../core/events/default-payloads.js';
import { isEventType } from '../core/events/event-types.js';
import { signatureHeader as signedHeader, signDeliveryHeaders } from '../core/signing/sign-delivery.js';
import { createWebSignatureCrypto } from '../core/signing/signature-crypto.js';

// Web Crypto: the same signatures on Node and in workerd.
const webCrypto = createWebSignatureCrypto();
const encoder = new TextEncoder();

const bytesOf = (body: string | Uint8Array) => (typeof body === 'string' ? encoder.encode(body) : body);
const nowSeconds = () => Math.floor(Date.now() / 1000);

/**
 * The `x-svc-signature` header the service would send for this body:
 * `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`. `t` defaults to now.
 */
export function signatureHeader(secret: string, body: string | Uint8Array, t: number = nowSeconds()): Promise<string> {
  return signedHeader(webCrypto, secret, t, bytesOf(body));
}

export interface SignDeliveryOptions {
  secret: string;
  /** The event type (`x-svc-event-type`); an unknown one is sent as is. */
  type: string;
  /** The body: a JSON value to serialise, or exact bytes / text. Default: the type's default payload. */
  payload?: unknown;
  body?: string | Uint8Array;
  /** The event id (`x-svc-event-id`); default a fresh uuid. */
  id?: string;
  /** The signature timestamp in Unix seconds; default now. */
  t?: number;
}

export interface SignedDelivery {
  eventId: string;
  eventType: string;
  t: number;
  body: Uint8Array<ArrayBuffer>;
  /** `x-svc-signature`, `x-svc-event-type`, `x-svc-event-id` and `content-type`. */
  headers: Record<string, string>;
}

/**
 * A delivery signed exactly as the service signs it: post `body` with `headers` to a receiver.
 *
 * @example
 * const d = await signDelivery({ secret, type: 'pod.created' });
 * await app.request('/webhooks', { method: 'POST', headers: d.headers, body: d.body });
 */
export async function signDelivery({ secret, type, payload, body, id, t = nowSeconds() }: SignDeliveryOptions): Promise<SignedDelivery> {
  const json = payload ?? (isEventType(type) ? defaultPayload(type, { now: t * 1000 }) : {});
  const bytes = new Uint8Array(bytesOf(body ?? JSON.stringify(json)));
  const eventId = id ?? crypto.randomUUID();
  const headers = await signDeliveryHeaders({ crypto: webCrypto, secret, eventId, eventType: type, body: bytes, t });
  return { eventId, eventType: type, t, body: bytes, headers: { 'content-type': 'application/json', ...headers } };
}
