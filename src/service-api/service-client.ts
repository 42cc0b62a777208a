import { newRequestId, REQUEST_ID_PATTERN } from '../core/pods/request-id.js';
import { answerJson } from '../core/pods/service-answer.js';
import { createServiceTransport, okAnswer } from '../core/pods/service-transport.js';
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

const sleepFor = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * A client for the service's key-authenticated surface (`/pods/v1`) as `podhook register` uses
 * it: the shared transport (one request id per request, the documented error shape turned into
 * `ServiceError`s) and a bounded wait-and-retry on `rate_limited`. Nothing else is retried:
 * creating a webhook is not idempotent, so after an `internal` error or a lost answer the webhook
 * may exist and a blind retry could make two.
 *
 * @example
 * const client = createServiceClient({ baseUrl: env.SVC_BASE_URL, apiKey: env.SVC_API_KEY });
 * const webhook = await client.createWebhook({ url: 'https://hooks.example.com/webhooks' });
 */
export function createServiceClient({
  baseUrl,
  apiKey,
  fetch,
  requestId = newRequestId,
  userAgent = 'podhook',
  maxRateLimitRetries = 3,
  maxWaitSeconds = 120,
  onRateLimited,
  sleep = sleepFor,
  timeoutMs = 30_000,
}: ServiceClientOptions): ServiceClient {
  const send = createServiceTransport({ baseUrl, fetch, userAgent, timeoutMs });

  async function post(path: string, body: unknown): Promise<{ json: unknown; requestId: string }> {
    for (let retry = 1; ; retry++) {
      const sentId = requestId();
      if (!REQUEST_ID_PATTERN.test(sentId)) throw new Error(`request id generator gave an id the service would not echo: ${sentId}`);
      try {
        const answer = okAnswer(await send({ method: 'POST', path, body, requestId: sentId, apiKey }), [apiKey]);
        return { json: answerJson(answer), requestId: answer.requestId };
      } catch (error) {
        if (!(error instanceof ServiceError) || error.code !== 'rate_limited' || retry > maxRateLimitRetries) throw error;
        // Within RETRY_AFTER_BOUNDS (1 to 3,600 s; 60 when absent): an answer cannot make it wait for ever.
        const waitSeconds = error.retryAfterSeconds!;
        if (waitSeconds > maxWaitSeconds) throw error;
        onRateLimited?.({ waitSeconds, retry, maxRetries: maxRateLimitRetries, requestId: error.requestId ?? sentId });
        await sleep(waitSeconds * 1000);
      }
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
