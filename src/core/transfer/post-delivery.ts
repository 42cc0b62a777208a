import { systemClock, type Clock } from '../clock.js';
import type { SignatureCrypto } from '../signing/signature-crypto.js';
import { signDeliveryHeaders } from '../signing/sign-delivery.js';

/** A delivery to POST: its id, type and the body bytes, sent exactly as they are. */
export interface OutgoingDelivery {
  eventId: string;
  eventType: string;
  body: Uint8Array;
  /** Default `application/json`. */
  contentType?: string;
}

/** How a receiver answered one POST, or why there was no answer. */
export interface PostAnswer {
  eventId: string;
  /** The HTTP status; null when no answer came (connection refused, timeout). */
  status: number | null;
  /** From a 200 body `{ duplicate }`; null when the body does not say. */
  duplicate: boolean | null;
  /** `error.code` from an error body, or why no answer came. */
  error: string | null;
  /** The response body as text (empty when none came). */
  body: string;
  /** A 3xx's `location`: redirects are never followed (the body would be sent elsewhere). */
  redirect?: string | null;
}

export interface DeliveryPosterOptions {
  /** Where the receiver listens, path included (e.g. `http://127.0.0.1:3000/webhooks`). */
  url: string;
  secret: string;
  crypto: SignatureCrypto;
  clock?: Clock;
  fetch?: typeof globalThis.fetch;
  /** How long to wait for each answer (default 30 s). */
  timeoutMs?: number;
}

/**
 * POSTs deliveries as the service does: each signed at send time with a fresh `t` (a captured
 * signature is outside the receiver's 300-second window by now), over the body bytes unchanged.
 * Never throws: a failed request is an answer with `status: null`.
 */
export function createDeliveryPoster({ url, secret, crypto, clock = systemClock, fetch = globalThis.fetch, timeoutMs = 30_000 }: DeliveryPosterOptions) {
  return async function postDelivery(d: OutgoingDelivery): Promise<PostAnswer> {
    const headers = await signDeliveryHeaders({ crypto, secret, eventId: d.eventId, eventType: d.eventType, body: d.body, t: Math.floor(clock() / 1000) });
    try {
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': d.contentType ?? 'application/json', 'user-agent': 'podhook', ...headers },
        body: d.body as Uint8Array<ArrayBuffer>,
        signal: AbortSignal.timeout(timeoutMs),
        redirect: 'manual',
      });
      if (res.status >= 300 && res.status <= 399) {
        await res.body?.cancel();
        return { eventId: d.eventId, status: res.status, duplicate: null, error: 'redirect', body: '', redirect: res.headers.get('location') };
      }
      const body = await res.text();
      const json = parseJson(body);
      return {
        eventId: d.eventId,
        status: res.status,
        duplicate: typeof json?.duplicate === 'boolean' ? json.duplicate : null,
        error: res.ok ? null : typeof json?.error?.code === 'string' ? json.error.code : null,
        body,
      };
    } catch (error) {
      return { eventId: d.eventId, status: null, duplicate: null, error: failureReason(error), body: '' };
    }
  };
}

/** One word or two for grouping answers in a summary: `200 new`, `200 duplicate`, `401 unauthorized`, `no answer (ECONNREFUSED)`. */
export function answerLabel(a: PostAnswer): string {
  if (a.status === null) return `no answer (${a.error})`;
  if (a.status >= 300 && a.status <= 399) return `${a.status} redirect to ${a.redirect ?? '(no location)'} (not followed)`;
  if (a.duplicate === false && parseJson(a.body)?.conflict === true) return `${a.status} quarantined (conflict)`;
  if (a.duplicate !== null) return `${a.status} ${a.duplicate ? 'duplicate' : 'new'}`;
  return a.error ? `${a.status} ${a.error}` : String(a.status);
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
function parseJson(text: string): any {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

function failureReason(error: unknown): string {
  if (error instanceof Error && error.name === 'TimeoutError') return 'timeout';
  // fetch rejects with a bare "fetch failed"; the reason (ECONNREFUSED, "bad port") is its cause.
  const cause = (error as { cause?: { code?: unknown; message?: unknown } }).cause;
  if (typeof cause?.code === 'string') return cause.code;
  if (typeof cause?.message === 'string') return cause.message;
  return error instanceof Error ? error.message : String(error);
}
