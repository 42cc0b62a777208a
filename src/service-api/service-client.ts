import { REQUEST_ID_PATTERN } from '../http/request-id.js';
import type { CreateWebhookBody } from './create-webhook-body.js';
import { ServiceError } from './service-error.js';
import { WEBHOOKS_PATH, type CreatedWebhook } from './webhook.js';

/** What the client tells its caller before it waits out a `rate_limited` answer. */
export interface RateLimitWait {
  waitSeconds: number;
  /** Which retry comes after the wait (1-based) and how many are allowed. */
  retry: number;
  maxRetries: number;
  requestId: string;
}

export interface ServiceClientOptions {
  /** `{base_url}`: the compute host (a trailing slash is fine). */
  baseUrl: string;
  /** The compute API key, sent as `X-API-Key`. */
  apiKey: string;
  fetch?: typeof fetch;
  /** A fresh `x-request-id` per request (8–64 of `A-Za-z0-9._-`). */
  requestId?: () => string;
  userAgent?: string;
  /** Retries after `rate_limited`, each after `details.retry_after_seconds`. */
  maxRateLimitRetries?: number;
  /** A longer wait than this is not waited out: the call fails with `rate_limited` at once. */
  maxWaitSeconds?: number;
  /** Called before each wait, so a command can show that it is waiting. */
  onRateLimited?: (wait: RateLimitWait) => void;
  sleep?: (ms: number) => Promise<void>;
  /** Per request, including reading the answer. */
  timeoutMs?: number;
}

export interface ServiceClient {
  /**
   * `POST {base_url}/pods/v1/webhooks`. Resolves to the created webhook with its one-time
   * `secret`; rejects with a `ServiceError` whose `code` says what went wrong.
   */
  createWebhook(body: CreateWebhookBody): Promise<CreatedWebhook>;
}

interface ErrorShape {
  error: { code: string; message: string; details?: Record<string, unknown> };
}

function isErrorShape(value: unknown): value is ErrorShape {
  const error = (value as { error?: unknown } | null)?.error as Record<string, unknown> | undefined;
  return typeof error === 'object' && error !== null && typeof error.code === 'string' && typeof error.message === 'string';
}

const sleepFor = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * A client for the service's key-authenticated surface (`/pods/v1`): one request id per
 * request, the documented error shape turned into `ServiceError`s, and a bounded wait-and-retry
 * on `rate_limited`. Nothing else is retried: creating a webhook is not idempotent, so after an
 * `internal` error or a lost answer the webhook may exist and a blind retry could make two.
 *
 * @example
 * const client = createServiceClient({ baseUrl: env.SVC_BASE_URL, apiKey: env.SVC_API_KEY });
 * const webhook = await client.createWebhook({ url: 'https://hooks.example.com/webhooks' });
 */
export function createServiceClient({
  baseUrl,
  apiKey,
  fetch: fetchFn = globalThis.fetch,
  requestId = () => `podhook-${crypto.randomUUID()}`,
  userAgent = 'podhook',
  maxRateLimitRetries = 3,
  maxWaitSeconds = 120,
  onRateLimited,
  sleep = sleepFor,
  timeoutMs = 30_000,
}: ServiceClientOptions): ServiceClient {
  const root = baseUrl.replace(/\/+$/, '');

  async function send(path: string, body: unknown): Promise<{ status: number; json: unknown; requestId: string }> {
    const sentId = requestId();
    if (!REQUEST_ID_PATTERN.test(sentId)) throw new Error(`request id generator gave an id the service would not echo: ${sentId}`);
    let response: Response;
    let text: string;
    try {
      response = await fetchFn(`${root}${path}`, {
        method: 'POST',
        headers: {
          'x-api-key': apiKey,
          'content-type': 'application/json',
          accept: 'application/json',
          'x-request-id': sentId,
          'user-agent': userAgent,
        },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
      });
      text = await response.text();
    } catch (error) {
      const cause = (error as Error & { cause?: { code?: string; message?: string } }).cause;
      const why = (error as Error).name === 'TimeoutError' ? `no answer within ${timeoutMs / 1000} s` : (cause?.code ?? cause?.message ?? (error as Error).message);
      throw new ServiceError('network_error', 0, `could not reach ${root} (${why})`, { requestId: sentId, cause: error });
    }
    const answeredId = response.headers.get('x-request-id') ?? sentId;
    let json: unknown;
    try {
      json = text === '' ? undefined : JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: response.status, json, requestId: answeredId };
  }

  async function post(path: string, body: unknown): Promise<{ json: unknown; requestId: string }> {
    for (let retry = 1; ; retry++) {
      const answer = await send(path, body);
      if (answer.status >= 200 && answer.status < 300) return answer;
      if (!isErrorShape(answer.json)) {
        throw new ServiceError('unexpected_response', answer.status, `the service answered HTTP ${answer.status} without its error shape`, {
          requestId: answer.requestId,
        });
      }
      const { code, message, details } = answer.json.error;
      const error = new ServiceError(code, answer.status, message, { requestId: answer.requestId, details });
      if (code !== 'rate_limited' || retry > maxRateLimitRetries) throw error;
      const offered = Number(details?.retry_after_seconds);
      const waitSeconds = Number.isFinite(offered) && offered >= 0 ? Math.ceil(offered) : 60;
      if (waitSeconds > maxWaitSeconds) throw error;
      onRateLimited?.({ waitSeconds, retry, maxRetries: maxRateLimitRetries, requestId: answer.requestId });
      await sleep(waitSeconds * 1000);
    }
  }

  return {
    async createWebhook(body) {
      const { json, requestId: id } = await post(WEBHOOKS_PATH, body);
      const webhook = (json as { webhook?: Partial<CreatedWebhook> } | undefined)?.webhook;
      if (!webhook || typeof webhook.id !== 'string') {
        throw new ServiceError('unexpected_response', 200, 'the service answered success without a webhook', { requestId: id });
      }
      if (typeof webhook.secret !== 'string' || webhook.secret === '') {
        throw new ServiceError(
          'unexpected_response',
          200,
          `the service created webhook ${webhook.id} but its answer carries no secret (rotate the endpoint's secret to get one)`,
          { requestId: id, details: { webhook_id: webhook.id } },
        );
      }
      return webhook as CreatedWebhook;
    },
  };
}
