import { baseUrlProblem } from './base-url.js';
import { PodsError } from './pods-error.js';
import { REQUEST_ID_PATTERN } from './request-id.js';
import { MAX_ANSWER_BYTES, readServiceAnswer, scrubSecrets, serviceError, type RawServiceAnswer } from './service-answer.js';

export interface ServiceTransportOptions {
  /** `{base_url}`: the compute host (a trailing slash is fine). Checked as `SVC_BASE_URL` is, with every URL called below it. */
  baseUrl: string;
  fetch?: typeof fetch;
  userAgent?: string;
  /** Per request, including reading the answer. */
  timeoutMs?: number;
  /** The most bytes of an answer read (default `MAX_ANSWER_BYTES`, 8 MiB). */
  maxAnswerBytes?: number;
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
  /** The compute API key, sent as `X-API-Key` and nowhere else (read by the caller where it is used, so a rotated key is the one sent). */
  apiKey: string;
  /** Aborts the request; the signal's reason is thrown as is. */
  signal?: AbortSignal;
}

/**
 * Sends one request and reads its answer within the cap (`RawServiceAnswer`, whatever its
 * status); rejects with a `PodsError` when there is none to read: the URL refused before sending
 * (`invalid_request`, status 0), no answer (`network_error`), a redirect (`redirect_refused`), an
 * answer over the cap (`answer_too_large`). Turning a non-2xx answer into its error is the
 * caller's (`serviceError`), as is decoding a 2xx one.
 */
export type ServiceTransport = (request: ServiceRequest) => Promise<RawServiceAnswer>;

/** The longest part of a redirect's `Location` an error quotes. */
const LOCATION_SHOWN = 200;

/**
 * The one way podhook talks to the service's key-authenticated surface (`podhook register`'s
 * client and the pod client both use it): `X-API-Key`, `x-request-id`, JSON in, a time limit, the
 * answer read as a stream within `maxAnswerBytes`. Nothing is retried here. Redirects are never
 * followed: a `3xx` is a `redirect_refused` error naming its `Location`, since the key would go
 * with it (https to plain http, another host). Every URL is checked by `SVC_BASE_URL`'s rules
 * (`baseUrlProblem`) before it is called. The API key is sent in its header only: if an error
 * repeats it, it is replaced by `[redacted]`.
 */
export function createServiceTransport({
  baseUrl,
  fetch: fetchFn = globalThis.fetch,
  userAgent = 'podhook',
  timeoutMs = 30_000,
  maxAnswerBytes = MAX_ANSWER_BYTES,
}: ServiceTransportOptions): ServiceTransport {
  const root = baseUrl.trim().replace(/\/+$/, '');
  const refused = (message: string) => new PodsError('invalid_request', 0, `${message}: nothing was sent`, { requestId: null });

  return async function serviceRequest({ method, path, query, body, requestId, apiKey, signal }) {
    if (!REQUEST_ID_PATTERN.test(requestId)) {
      throw refused(`request id ${JSON.stringify(requestId)} is not 8 to 64 of A-Za-z0-9._- (the service would not echo it)`);
    }
    let url: URL;
    try {
      url = new URL(`${root}${path}`);
    } catch {
      throw refused('the service base URL (SVC_BASE_URL) is not a URL');
    }
    for (const [name, value] of Object.entries(query ?? {})) if (value !== undefined) url.searchParams.set(name, value);
    const problem = baseUrlProblem(url.href);
    if (problem) throw refused(`the URL to call ${problem}`);
    const scrub = <T>(value: T): T => scrubSecrets(value, [apiKey]);
    const headers: Record<string, string> = { 'x-api-key': apiKey, accept: 'application/json', 'x-request-id': requestId, 'user-agent': userAgent };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const timeout = AbortSignal.timeout(timeoutMs);
    try {
      const response = await fetchFn(url, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
        redirect: 'manual',
      });
      if ((response.type as string) === 'opaqueredirect' || (response.status >= 300 && response.status < 400)) {
        await response.body?.cancel().catch(() => {});
        throw redirectRefused(response, requestId, scrub);
      }
      return await readServiceAnswer(response, { requestId, maxBytes: maxAnswerBytes });
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      if (error instanceof PodsError) throw error;
      const cause = (error as Error & { cause?: { code?: string; message?: string } }).cause;
      const why = timeout.aborted ? `no answer within ${timeoutMs / 1000} s` : (cause?.code ?? cause?.message ?? (error as Error).message);
      throw new PodsError('network_error', 0, `could not reach ${url.origin} (${scrub(why)})`, { requestId, cause: error });
    }
  };
}

/** A `3xx` as an error: its status and where it pointed (without a user or password, the key scrubbed, shortened). */
function redirectRefused(response: Response, requestId: string, scrub: (text: string) => string): PodsError {
  const answeredId = response.headers.get('x-request-id') ?? requestId;
  const location = response.headers.get('location');
  let shown = location === null ? '(no Location)' : location;
  if (location !== null) {
    try {
      const target = new URL(location, response.url || undefined);
      target.username = '';
      target.password = '';
      shown = target.href;
    } catch {
      // A Location that is no URL is shown as sent (scrubbed and shortened below).
    }
  }
  shown = scrub(shown);
  if (shown.length > LOCATION_SHOWN) shown = `${shown.slice(0, LOCATION_SHOWN)}…`;
  return new PodsError(
    'redirect_refused',
    response.status,
    `the service answered HTTP ${response.status || 'redirect'} to ${shown}: podhook follows no redirect, since the API key would go with it (if the service moved, set SVC_BASE_URL to its new https:// address)`,
    { requestId: answeredId, details: { location: shown } },
  );
}

/** The answer when it is a 2xx; otherwise throws the error it stands for (`serviceError`, with `secrets` scrubbed). */
export function okAnswer(raw: RawServiceAnswer, secrets: readonly string[]): RawServiceAnswer {
  const error = serviceError(raw, secrets);
  if (error) throw error;
  return raw;
}
