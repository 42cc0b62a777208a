import { PodsError } from './pods-error.js';
import { REQUEST_ID_PATTERN } from './request-id.js';

export interface ServiceTransportOptions {
  /** `{base_url}`: the compute host (a trailing slash is fine). */
  baseUrl: string;
  /** The compute API key: sent as `X-API-Key` and nowhere else. */
  apiKey: string;
  fetch?: typeof fetch;
  userAgent?: string;
  /** Per request, including reading the answer. */
  timeoutMs?: number;
}

/** One request to the service's `/pods/v1` surface. */
export interface ServiceRequest {
  method: 'GET' | 'POST';
  /** Below `{base_url}`, e.g. `/pods/v1/pods`. */
  path: string;
  /** Query parameters; undefined values are left out. */
  query?: Record<string, string | undefined>;
  /** A JSON body (POST). */
  body?: unknown;
  /** Sent as `x-request-id`: 8–64 of `A-Za-z0-9._-`. */
  requestId: string;
  /** Aborts the request; the signal's reason is thrown as is. */
  signal?: AbortSignal;
}

/** A 2xx answer: its status, its parsed JSON body (undefined when empty or not JSON), and the request id it echoed. */
export interface ServiceAnswer {
  status: number;
  json: unknown;
  requestId: string;
}

/** Sends one request; resolves with a 2xx answer, rejects with a `PodsError` otherwise (the caller decides about retries). */
export type ServiceTransport = (request: ServiceRequest) => Promise<ServiceAnswer>;

interface ErrorShape {
  error: { code: string; message: string; details?: Record<string, unknown> };
}

function isErrorShape(value: unknown): value is ErrorShape {
  const error = (value as { error?: unknown } | null)?.error as Record<string, unknown> | undefined;
  return typeof error === 'object' && error !== null && typeof error.code === 'string' && typeof error.message === 'string';
}

/**
 * The one way podhook talks to the service's key-authenticated surface (`podhook register`'s
 * client and the pod client both use it): `X-API-Key`, `x-request-id`, JSON in and out, a time
 * limit, and every failure turned into a `PodsError` carrying the spec's `code`, the status, the
 * request id and `details`. Nothing is retried here. The API key is sent in its header only: if
 * an answer repeats it (in `message` or `details`), it is replaced by `[redacted]` before it can
 * reach an error, a log line or an alert.
 */
export function createServiceTransport({
  baseUrl,
  apiKey,
  fetch: fetchFn = globalThis.fetch,
  userAgent = 'podhook',
  timeoutMs = 30_000,
}: ServiceTransportOptions): ServiceTransport {
  const root = baseUrl.replace(/\/+$/, '');
  const scrub = <T>(value: T): T => scrubKey(value, apiKey);

  return async function serviceRequest({ method, path, query, body, requestId, signal }) {
    if (!REQUEST_ID_PATTERN.test(requestId)) {
      throw new PodsError('invalid_request', 0, `request id ${JSON.stringify(requestId)} is not 8 to 64 of A-Za-z0-9._- (the service would not echo it): nothing was sent`, { requestId: null });
    }
    const url = new URL(`${root}${path}`);
    for (const [name, value] of Object.entries(query ?? {})) if (value !== undefined) url.searchParams.set(name, value);
    const headers: Record<string, string> = { 'x-api-key': apiKey, accept: 'application/json', 'x-request-id': requestId, 'user-agent': userAgent };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const timeout = AbortSignal.timeout(timeoutMs);
    let response: Response;
    let text: string;
    try {
      response = await fetchFn(url, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
      text = await response.text();
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      const cause = (error as Error & { cause?: { code?: string; message?: string } }).cause;
      const why = timeout.aborted ? `no answer within ${timeoutMs / 1000} s` : (cause?.code ?? cause?.message ?? (error as Error).message);
      throw new PodsError('network_error', 0, `could not reach ${root} (${scrub(why)})`, { requestId, cause: error });
    }
    const answeredId = response.headers.get('x-request-id') ?? requestId;
    let json: unknown;
    try {
      json = text === '' ? undefined : JSON.parse(text);
    } catch {
      json = undefined;
    }
    if (response.status >= 200 && response.status < 300) return { status: response.status, json, requestId: answeredId };
    if (!isErrorShape(json)) {
      throw new PodsError('unexpected_response', response.status, `the service answered HTTP ${response.status} without its error shape`, { requestId: answeredId });
    }
    const { code, message, details } = json.error;
    throw new PodsError(code, response.status, scrub(message), { requestId: answeredId, details: scrub(details) });
  };
}

/** `value` with every occurrence of `secret` in its strings replaced by `[redacted]` (objects and arrays walked). */
function scrubKey<T>(value: T, secret: string): T {
  if (secret === '') return value;
  if (typeof value === 'string') return (value.includes(secret) ? value.split(secret).join('[redacted]') : value) as T;
  if (Array.isArray(value)) return value.map((v) => scrubKey(v, secret)) as T;
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [scrubKey(k, secret), scrubKey(v, secret)])) as T;
  }
  return value;
}
