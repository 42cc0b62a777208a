import { readCapped } from '../read-capped.js';
import { PodsError } from './pods-error.js';

/** The most bytes of one answer of the service the client reads (8 MiB): a larger one is cut there, with `answer_too_large`. */
export const MAX_ANSWER_BYTES = 8 * 1024 * 1024;

/**
 * One answer of the service, read but not decoded: what crosses from the thread that made the
 * request to the one that decodes it (`bytes` fills its own `ArrayBuffer`: `bytes.buffer` can be
 * transferred, not copied).
 */
export interface RawServiceAnswer {
  status: number;
  /** The service's `x-request-id` echo, else the id the request was sent with. */
  requestId: string;
  /** The body's bytes, read within the cap. */
  bytes: Uint8Array;
}

export interface ReadAnswerOptions {
  /** The id the request was sent with (kept when the service echoes none). */
  requestId: string;
  /** Default `MAX_ANSWER_BYTES`. */
  maxBytes?: number;
}

/**
 * (a) Reads an answer: its status, its echoed request id, and its body's bytes as a stream, cut at
 * `maxBytes`: a declared `Content-Length` over it is refused before a byte is read, a longer
 * stream is cancelled at it. Either way a `PodsError` `answer_too_large` (not retryable), and at
 * most `maxBytes` were held. Web APIs only.
 */
export async function readServiceAnswer(response: Response, { requestId, maxBytes = MAX_ANSWER_BYTES }: ReadAnswerOptions): Promise<RawServiceAnswer> {
  const answeredId = response.headers.get('x-request-id') ?? requestId;
  const tooLarge = () =>
    new PodsError('answer_too_large', response.status, `the service's answer (HTTP ${response.status}) is larger than ${maxBytes} bytes: it was cut there and not read`, {
      requestId: answeredId,
      details: { max_bytes: maxBytes },
    });
  const declared = response.headers.get('content-length');
  if (declared !== null && /^\d{1,15}$/.test(declared) && Number(declared) > maxBytes) {
    await response.body?.cancel().catch(() => {});
    throw tooLarge();
  }
  const read = await readCapped(response.body, maxBytes);
  if (read === null) throw tooLarge();
  // Its own buffer, whole: `bytes.buffer` can be transferred to another thread without taking (or
  // handing over) memory a stream's chunk shared with anything else.
  const bytes = read.byteOffset === 0 && read.byteLength === read.buffer.byteLength ? read : read.slice();
  return { status: response.status, requestId: answeredId, bytes };
}

const ok = (status: number) => status >= 200 && status < 300;
const decoder = new TextDecoder();

/** A code the service sent, as the error keeps it: its own word, or `unexpected_response` when it is not one (a code is a word, not prose). */
const CODE = /^[A-Za-z][A-Za-z0-9_.-]{0,63}$/;

interface ErrorShape {
  error: { code: string; message: string; details?: Record<string, unknown> };
}

function isErrorShape(value: unknown): value is ErrorShape {
  const error = (value as { error?: unknown } | null)?.error as Record<string, unknown> | undefined;
  return typeof error === 'object' && error !== null && typeof error.code === 'string' && typeof error.message === 'string';
}

function parseJson(bytes: Uint8Array): { ok: true; value: unknown } | { ok: false } {
  if (bytes.byteLength === 0) return { ok: true, value: undefined };
  try {
    return { ok: true, value: JSON.parse(decoder.decode(bytes)) };
  } catch {
    return { ok: false };
  }
}

/**
 * (b) The error a non-2xx answer stands for, or null for a 2xx: the spec's error shape as a
 * `PodsError` (its `code`, `message`, `details`, the status and request id), else
 * `unexpected_response`. Every string of `secrets` (the API key sent) is replaced by `[redacted]`
 * in the code, message and details, so a service that repeats the key cannot make it reach an
 * error, a log line or a metric. Pure (Web APIs only).
 */
export function serviceError(raw: RawServiceAnswer, secrets: readonly string[] = []): PodsError | null {
  if (ok(raw.status)) return null;
  const parsed = parseJson(raw.bytes);
  if (!parsed.ok || !isErrorShape(parsed.value)) {
    return new PodsError('unexpected_response', raw.status, `the service answered HTTP ${raw.status} without its error shape`, { requestId: raw.requestId });
  }
  const { code, message, details } = parsed.value.error;
  const scrubbed = scrubSecrets(code, secrets);
  const kept = CODE.test(scrubbed) ? scrubbed : 'unexpected_response';
  return new PodsError(kept, raw.status, scrubSecrets(message, secrets), { requestId: raw.requestId, details: scrubSecrets(details, secrets) });
}

/**
 * (b) A 2xx answer's JSON body (undefined when empty); a `PodsError` `unexpected_response` when it
 * is not JSON. Pure (Web APIs only): usable on the thread that made the request or another.
 */
export function answerJson(raw: RawServiceAnswer, operation?: string): unknown {
  const parsed = parseJson(raw.bytes);
  if (!parsed.ok) {
    throw new PodsError('unexpected_response', raw.status, `the service answered HTTP ${raw.status} with a body that is not JSON`, { requestId: raw.requestId, operation });
  }
  return parsed.value;
}

/** `value` with every occurrence of each secret in its strings replaced by `[redacted]` (objects and arrays walked). */
export function scrubSecrets<T>(value: T, secrets: readonly string[]): T {
  const present = secrets.filter((s) => s !== '');
  if (present.length === 0) return value;
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return present.reduce((text, secret) => (text.includes(secret) ? text.split(secret).join('[redacted]') : text), v);
    if (Array.isArray(v)) return v.map(walk);
    if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [walk(k), walk(x)]));
    return v;
  };
  return walk(value) as T;
}
