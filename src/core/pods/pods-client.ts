import { systemClock, type Clock } from '../clock.js';
import { UUID } from '../ingest/receive-delivery.js';
import { abortableSleep, type AccountLimits, type RateGrant } from '../limits/account-limits.js';
import type { BucketName } from '../limits/bucket-size.js';
import { PodsError, PodsRateLimited } from './pods-error.js';
import type { PodsObserver, PodsOperation } from './pods-observer.js';
import { isPodAction, POD_ACTIONS, type ChatTicket, type MintedKey, type PodAction, type PodsPage, type QueuedAction } from './pods-types.js';
import { DEFAULT_PODS_WIRE, type PodsWireNames } from './pods-wire.js';
import { newRequestId, pageRequestId, REQUEST_ID_PATTERN } from './request-id.js';
import { createServiceTransport, type ServiceAnswer, type ServiceRequest } from './service-transport.js';

/** The longest key name the service takes (spec: Limits, Key `name`). */
export const MAX_KEY_NAME_LENGTH = 60;
/** When a `429` carries no `retry_after_seconds`, this long is waited. */
export const DEFAULT_RETRY_AFTER_SECONDS = 60;

export interface PodsClientOptions {
  /** `{base_url}`: the compute host (`SVC_BASE_URL`). */
  baseUrl: string;
  /** The compute API key (`SVC_API_KEY`, or the stored one): sent only as `X-API-Key`. */
  apiKey: string;
  /**
   * The account's limits in the store, shared by every process and replica: each call takes a
   * token of its bucket first, and a `429` empties that bucket for all. Without it the client only
   * waits out a `429` that fits in `maxWaitMs`.
   */
  limits?: AccountLimits;
  /** The names the spec does not show (list parameters, action body property); see `DEFAULT_PODS_WIRE`. */
  wire?: Partial<PodsWireNames>;
  /** The longest a call waits for its bucket or a `429` (default 60 s); per call: `maxWaitMs`. */
  maxWaitMs?: number;
  /** `429` answers in a row a call waits out before it gives up with `PodsRateLimited` (default 3). */
  maxRateLimitedAnswers?: number;
  /** A fresh `x-request-id` per call when the call gives none (8–64 of `A-Za-z0-9._-`). */
  requestId?: () => string;
  observer?: PodsObserver;
  fetch?: typeof fetch;
  userAgent?: string;
  /** Per request, including reading the answer (default 30 s). */
  timeoutMs?: number;
  clock?: Clock;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

/** Options every call takes. */
export interface PodsCallOptions {
  /** The call's `x-request-id` (8–64 of `A-Za-z0-9._-`): the same id for a repeated call, e.g. derived from a step's key. */
  requestId?: string;
  signal?: AbortSignal;
  /** The longest this call may wait for its bucket (a handler: its time left); beyond it `PodsRateLimited` is thrown. */
  maxWaitMs?: number;
}

export interface ListPodsQuery {
  /** 1 to 100. */
  pageSize?: number;
  /** A previous page's `next_cursor`. */
  cursor?: string;
  /** Only the pods with this `external_ref` (the caller's own id). */
  externalRef?: string;
}

/** The service's pod surface (`/pods/v1`), typed from the spec, within the account's limits. */
export interface PodsClient {
  /** `GET /pods/v1/pods`: one page, newest first (read bucket). */
  list(query?: ListPodsQuery, options?: PodsCallOptions): Promise<PodsPage>;
  /**
   * Every page in turn, from `query.cursor` (or the first) to the last: `for await (const page of
   * pods.pages())`. With `requestId`, page n sends `<id>.<n>` (the first the id itself).
   */
  pages(query?: ListPodsQuery, options?: PodsCallOptions): AsyncGenerator<PodsPage, void, undefined>;
  /** `POST /pods/v1/pods/{id}/actions` (write bucket): the queued action (202; the pod applies it within about 60 s). */
  queueAction(podId: string, action: PodAction, options?: PodsCallOptions): Promise<QueuedAction>;
  /** `GET /pods/v1/pods/{id}/actions`, the poll route (read bucket): its answer as parsed JSON (the spec does not show it). */
  actions(podId: string, options?: PodsCallOptions): Promise<unknown>;
  /**
   * The output of the last `diagnose` or `logs`: `last_result` of the poll route's answer (at its
   * top level, else under `action`), null while none is written; undefined when the answer has no such field.
   */
  lastResult(podId: string, options?: PodsCallOptions): Promise<unknown>;
  /** `POST /pods/v1/pods/{id}/keys` (key-mint bucket, 30 an hour): the key, whose `secret` is shown this once. */
  mintKey(podId: string, options?: PodsCallOptions & { name?: string }): Promise<MintedKey>;
  /** `POST /pods/v1/pods/{id}/chat-ticket` (write bucket): a ticket; its `websocket_url` is a secret, never to be persisted. */
  chatTicket(podId: string, options?: PodsCallOptions): Promise<ChatTicket>;
}

const localError = (message: string, operation: PodsOperation) => new PodsError('invalid_request', 0, `${message}: nothing was sent`, { requestId: null, operation });

/**
 * The pod client: a typed call per route of the service's pod surface, each sent with
 * `X-API-Key` and an `x-request-id`, within the account's limits (`limits`), failing with a
 * `PodsError` (`code`, `status`, `requestId`, `details`, `retryable`) or, when its bucket has no
 * token in the time it may wait, `PodsRateLimited` (`retryAt`). Input the spec bounds (page size,
 * key name, action, pod id) is checked before anything is sent.
 *
 * @example
 * const pods = createPodsClient({ baseUrl: process.env.SVC_BASE_URL!, apiKey: process.env.SVC_API_KEY!, limits: createAccountLimits({ store }) });
 * const queued = await pods.queueAction(podId, 'diagnose');
 * for await (const page of pods.pages({ pageSize: 100 })) console.log(page.pods.length);
 */
export function createPodsClient({
  baseUrl,
  apiKey,
  limits,
  wire: wireOverrides,
  maxWaitMs: defaultMaxWaitMs = 60_000,
  maxRateLimitedAnswers = 3,
  requestId: generateId = newRequestId,
  observer,
  fetch,
  userAgent = 'podhook',
  timeoutMs,
  clock = systemClock,
  sleep = abortableSleep,
}: PodsClientOptions): PodsClient {
  const wire = { ...DEFAULT_PODS_WIRE, ...wireOverrides };
  const send = createServiceTransport({ baseUrl, apiKey, fetch, userAgent, timeoutMs });

  /** One call: a token of its bucket (or a wait, or `PodsRateLimited`), the request, and `429`s handled for every replica. */
  async function call(operation: PodsOperation, bucket: BucketName, request: Omit<ServiceRequest, 'requestId' | 'signal'>, options: PodsCallOptions = {}): Promise<ServiceAnswer> {
    const { signal } = options;
    const requestId = options.requestId ?? generateId();
    // Checked before a token is taken: an id the service would not echo costs nothing.
    if (!REQUEST_ID_PATTERN.test(requestId)) throw localError(`request id ${JSON.stringify(requestId)} is not 8 to 64 of A-Za-z0-9._-`, operation);
    const deadline = clock() + Math.max(0, options.maxWaitMs ?? defaultMaxWaitMs);
    let refused: PodsError | undefined;
    for (let answers429 = 0; ; ) {
      let grant: RateGrant | undefined;
      let waited = 0;
      if (limits) {
        grant = await limits.acquire(bucket, {
          maxWaitMs: deadline - clock(),
          signal,
          operation,
          requestId: refused?.requestId ?? null,
          details: refused?.details,
        });
        waited = grant.waitedMs;
      } else if (refused) {
        const waitMs = (refused.retryAfterSeconds ?? DEFAULT_RETRY_AFTER_SECONDS) * 1000;
        if (clock() + waitMs > deadline) throw rateLimitedAfter(refused, bucket, operation, clock() + waitMs);
        await sleep(waitMs, signal);
        waited = waitMs;
      }
      if (waited > 0) observer?.wait?.({ operation, bucket, waitedMs: waited });
      const started = clock();
      try {
        const answer = await send({ ...request, requestId, signal });
        observer?.call?.({ operation, bucket, code: 'ok', status: answer.status, requestId: answer.requestId, durationMs: clock() - started });
        return answer;
      } catch (error) {
        if (!(error instanceof PodsError)) throw error;
        observer?.call?.({ operation, bucket, code: error.code, status: error.status, requestId: error.requestId ?? requestId, durationMs: clock() - started });
        if (error.code !== 'rate_limited') throw withOperation(error, operation);
        refused = error;
        const retryAfter = error.retryAfterSeconds ?? DEFAULT_RETRY_AFTER_SECONDS;
        if (++answers429 > maxRateLimitedAnswers) throw rateLimitedAfter(error, bucket, operation, clock() + retryAfter * 1000);
        // Every process and replica holds back until the service's time, not only this call.
        if (limits) await limits.backOff(bucket, retryAfter);
      } finally {
        // The token comes back a window after the answer: latency cannot crowd the service's window.
        await grant?.settle();
      }
    }
  }

  function checkPodId(podId: string, operation: PodsOperation): string {
    if (typeof podId !== 'string' || !UUID.test(podId)) throw localError(`pod id must be a uuid (got ${JSON.stringify(podId)})`, operation);
    return podId.toLowerCase();
  }

  function expectObject(answer: ServiceAnswer, field: string, operation: PodsOperation): Record<string, unknown> {
    const value = (answer.json as Record<string, unknown> | undefined)?.[field];
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      throw new PodsError('unexpected_response', answer.status, `the service answered HTTP ${answer.status} without ${field}`, { requestId: answer.requestId, operation });
    }
    return value as Record<string, unknown>;
  }

  async function list(query: ListPodsQuery = {}, options?: PodsCallOptions): Promise<PodsPage> {
    const { pageSize, cursor, externalRef } = query;
    if (pageSize !== undefined && (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > 100)) {
      throw localError(`pageSize must be a whole number from 1 to 100 (got ${pageSize})`, 'list');
    }
    const answer = await call(
      'list',
      'reads',
      {
        method: 'GET',
        path: '/pods/v1/pods',
        query: { [wire.pageSizeParam]: pageSize?.toString(), [wire.cursorParam]: cursor || undefined, [wire.externalRefParam]: externalRef },
      },
      options,
    );
    const body = answer.json as { pods?: unknown; next_cursor?: unknown } | undefined;
    if (!Array.isArray(body?.pods)) {
      throw new PodsError('unexpected_response', answer.status, `the service answered HTTP ${answer.status} without a pods list`, { requestId: answer.requestId, operation: 'list' });
    }
    const next = body.next_cursor;
    return { pods: body.pods as PodsPage['pods'], next_cursor: typeof next === 'string' && next !== '' ? next : null };
  }

  async function actions(podId: string, options?: PodsCallOptions): Promise<unknown> {
    const id = checkPodId(podId, 'actions');
    return (await call('actions', 'reads', { method: 'GET', path: `/pods/v1/pods/${id}/actions` }, options)).json;
  }

  return {
    list,

    async *pages(query = {}, options = {}) {
      let cursor = query.cursor;
      for (let page = 1; ; page++) {
        const requestId = options.requestId === undefined ? undefined : pageRequestId(options.requestId, page);
        const answer = await list({ ...query, cursor }, { ...options, requestId });
        yield answer;
        if (answer.next_cursor === null || answer.next_cursor === cursor) return;
        cursor = answer.next_cursor;
      }
    },

    async queueAction(podId, action, options) {
      const id = checkPodId(podId, 'queueAction');
      if (!isPodAction(action)) throw localError(`action must be one of ${POD_ACTIONS.join(', ')} (got ${JSON.stringify(action)})`, 'queueAction');
      const answer = await call('queueAction', 'writes', { method: 'POST', path: `/pods/v1/pods/${id}/actions`, body: { [wire.actionProperty]: action } }, options);
      return expectObject(answer, 'action', 'queueAction') as unknown as QueuedAction;
    },

    actions,

    async lastResult(podId, options) {
      const answer = await actions(podId, options);
      if (typeof answer !== 'object' || answer === null) return undefined;
      if (Object.hasOwn(answer, 'last_result')) return (answer as { last_result: unknown }).last_result;
      const nested = (answer as { action?: unknown }).action;
      return typeof nested === 'object' && nested !== null && Object.hasOwn(nested, 'last_result') ? (nested as { last_result: unknown }).last_result : undefined;
    },

    async mintKey(podId, { name, ...options } = {}) {
      const id = checkPodId(podId, 'mintKey');
      if (name !== undefined) {
        const length = [...name].length;
        if (typeof name !== 'string' || length === 0 || length > MAX_KEY_NAME_LENGTH) {
          throw localError(`a key name is 1 to ${MAX_KEY_NAME_LENGTH} characters (got ${length})`, 'mintKey');
        }
      }
      const answer = await call('mintKey', 'key_mints', { method: 'POST', path: `/pods/v1/pods/${id}/keys`, body: name === undefined ? {} : { name } }, options);
      const key = expectObject(answer, 'key', 'mintKey');
      return { key, endpoint: expectObject(answer, 'endpoint', 'mintKey') } as unknown as MintedKey;
    },

    async chatTicket(podId, options) {
      const id = checkPodId(podId, 'chatTicket');
      const answer = await call('chatTicket', 'writes', { method: 'POST', path: `/pods/v1/pods/${id}/chat-ticket`, body: {} }, options);
      return expectObject(answer, 'chat', 'chatTicket') as unknown as ChatTicket;
    },
  };
}

function withOperation(error: PodsError, operation: PodsOperation): PodsError {
  error.operation ??= operation;
  return error;
}

function rateLimitedAfter(answer: PodsError, bucket: BucketName, operation: PodsOperation, retryAt: number): PodsRateLimited {
  return new PodsRateLimited({ bucket, retryAt, requestId: answer.requestId, details: answer.details, operation, message: `${answer.message} (rate_limited; retry after ${new Date(retryAt).toISOString()})` });
}
