import { createHmac, randomUUID } from 'node:crypto';

export const TEST_SECRET = 'whsec_test_3f9a1c0b7d2e4a58';
export const FIXED_NOW_MS = 1_790_000_000_000;

export interface SignedDelivery {
  body: Uint8Array<ArrayBuffer>;
  headers: Record<string, string>;
  eventId: string;
  eventType: string;
  t: number;
}

export interface SignOptions {
  body?: string | Uint8Array | object;
  eventType?: string;
  eventId?: string;
  /** Signature timestamp in seconds. */
  t?: number;
  secret?: string;
  /** Extra `v1` values placed before the valid one. */
  extraSignatures?: string[];
  /** Replace the whole signature header. */
  signatureHeader?: string;
}

/** HMAC-SHA256 of `<t>.<body>` as the service computes it (spec: Events, Delivery headers). */
export function mac(secret: string, t: string | number, body: Uint8Array | string): string {
  return createHmac('sha256', secret).update(`${t}.`).update(body).digest('hex');
}

/**
 * Builds a delivery signed exactly as the service does (the `TestPayload` builder of
 * standard-webhooks): raw body bytes, `t=<unix>,v1=<hex>`, event type and id headers.
 */
export function signDelivery({
  body = { pod: { id: randomUUID(), name: 'demo', status: 'provisioning' } },
  eventType = 'pod.created',
  eventId = randomUUID(),
  t = Math.floor(FIXED_NOW_MS / 1000),
  secret = TEST_SECRET,
  extraSignatures = [],
  signatureHeader,
}: SignOptions = {}): SignedDelivery {
  // A copy either way; `new Uint8Array` also types it over an ArrayBuffer in workerd's typings.
  const bytes = new Uint8Array(
    body instanceof Uint8Array ? body : new TextEncoder().encode(typeof body === 'string' ? body : JSON.stringify(body)),
  );
  const v1 = [...extraSignatures, mac(secret, t, bytes)].map((s) => `v1=${s}`).join(',');
  return {
    body: bytes,
    eventId,
    eventType,
    t,
    headers: {
      'content-type': 'application/json',
      'x-svc-signature': signatureHeader ?? `t=${t},${v1}`,
      'x-svc-event-type': eventType,
      'x-svc-event-id': eventId,
    },
  };
}

/** A Request for `app.request` / `fetch`. */
export function toRequest(d: SignedDelivery, url = 'http://podhook.test/webhooks', headers: Record<string, string> = {}): Request {
  return new Request(url, { method: 'POST', body: d.body, headers: { ...d.headers, ...headers } });
}
