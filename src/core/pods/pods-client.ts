import { systemClock, type Clock } from '../clock.js';
import { abortableSleep, type AccountLimits, type RateGrant } from '../limits/account-limits.js';
import type { BucketName } from '../limits/bucket-size.js';
import { isoTime, PodsError, PodsRateLimited } from './pods-error.js';
import type { PodsObserver, PodsOperation } from './pods-observer.js';
import { decodePodsAnswer, localError, planPodsRequest, type ListPodsQuery, type PodsCallName, type PodsCalls, type PodsRequestPlan } from './pods-operations.js';
import { walkPages } from './pods-pages.js';
import type { ChatTicket, MintedKey, PodAction, PodsPage, QueuedAction } from './pods-types.js';
import { DEFAULT_PODS_WIRE, type PodsWireNames } from './pods-wire.js';
import { newRequestId, REQUEST_ID_PATTERN } from './request-id.js';
import type { ApiKeySource } from './resolve-api-key.js';
import { serviceError, type RawServiceAnswer } from './service-answer.js';
import { createServiceTransport } from './service-transport.js';

export { DEFAULT_RETRY_AFTER_SECONDS } from './pods-error.js';
export { MAX_KEY_NAME_LENGTH, type ListPodsQuery } from './pods-operations.js';

export interface PodsClientOptions {
  /** `{base_url}`: the compute host (`SVC_BASE_URL`), checked by its rules, as is every URL called below it. */
  baseUrl: string;
  /**
   * The compute API key (`SVC_API_KEY`, or the stored one): sent only as `X-API-Key`. A source
   * (`createApiKeySource`) is read before each request, so a rotated key is used without a restart;
   * an `unauthorized` answer reads it again, and a call whose key changed meanwhile is sent once more.
   */
  apiKey: string | ApiKeySource;
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
  /** The most bytes of one answer read (default `MAX_ANSWER_BYTES`, 8 MiB); a larger one is `answer_too_large`. */
  maxAnswerBytes?: number;
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

/** What `pages()` takes besides a call's options. */
export interface PagesOptions extends PodsCallOptions {
  /** The most pages read (default `DEFAULT_MAX_PAGES`, 1,000); more is `unexpected_response`. */
  maxPages?: number;
}

/** The service's pod surface (`/pods/v1`), typed from the spec, within the account's limits. */
export interface PodsClient {
  /** `GET /pods/v1/pods`: one page, newest first (read bucket). */
  list(query?: ListPodsQuery, options?: PodsCallOptions): Promise<PodsPage>;
  /**
   * Every page in turn, from `query.cursor` (or the first) to the last: `for await (const page of
   * pods.pages())`. With `requestId`, page n sends `<id>.<n>` (the first the id itself). A cursor
   * given before, or more than `maxPages` pages, ends it with `unexpected_response`.
   */
  pages(query?: ListPodsQuery, options?: PagesOptions): AsyncGenerator<PodsPage, void, undefined>;
  /** `POST /pods/v1/pods/{id}/actions` (write bucket): the queued action (202; the pod applies it within about 60 s). */
  queueAction(podId: string, action: PodAction, options?: PodsCallOptions): Promise<QueuedAction>;
  /** `GET /pods/v1/pods/{id}/actions`, the poll route (read bucket): its answer, a JSON object (the spec does not show it). */
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

/**
 * The client as the thread holding the key uses it: besides the typed calls, `answer` makes a
 * call and resolves with its 2xx answer as read (`RawServiceAnswer`), not decoded, so another
 * thread can decode it (`decodePodsAnswer(name, raw, args)`). Non-2xx answers are turned into
 * their `PodsError` here (the key is scrubbed from them here, and `429` and `unauthorized` are handled here).
 */
export interface AnsweringPodsClient extends PodsClient {
  answer<N extends PodsCallName>(name: N, args: PodsCalls[N]['args'], options?: PodsCallOptions): Promise<RawServiceAnswer>;
}

/**
 * The pod client: a typed call per route of the service's pod surface, each sent with
 * `X-API-Key` and an `x-request-id`, within the account's limits (`limits`), failing with a
 * `PodsError` (`code`, `status`, `requestId`, `details`, `retryable`) or, when its bucket has no
 * token in the time it may wait, `PodsRateLimited` (`retryAt`). Input the spec bounds (page size,
 * key name, action, pod id) is checked before anything is sent; answers are read within a size
 * cap and decoded strictly (`decodePodsAnswer`).
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
  maxAnswerBytes,
  clock = systemClock,
  sleep = abortableSleep,
}: PodsClientOptions): AnsweringPodsClient {
  const wire = { ...DEFAULT_PODS_WIRE, ...wireOverrides };
  const send = createServiceTransport({ baseUrl, fetch, userAgent, timeoutMs, maxAnswerBytes });
  const keys: ApiKeySource = typeof apiKey === 'string' ? { current: async () => apiKey, reload: async () => apiKey } : apiKey;

  /**
   * One call: a token of its bucket (or a wait, or `PodsRateLimited`), the request with the key in
   * force, `429`s handled for every replica, and an `unauthorized` sent once more when the key was
   * rotated since it was read. Resolves with the 2xx answer, undecoded.
   */
  async function call({ operation, bucket, request }: PodsRequestPlan, options: PodsCallOptions = {}): Promise<RawServiceAnswer> {
    const { signal } = options;
    const requestId = options.requestId ?? generateId();
    // Checked before a token is taken: an id the service would not echo costs nothing.
    if (!REQUEST_ID_PATTERN.test(requestId)) throw localError(`request id ${JSON.stringify(requestId)} is not 8 to 64 of A-Za-z0-9._-`, operation);
    const deadline = clock() + Math.max(0, options.maxWaitMs ?? defaultMaxWaitMs);
    let refused: PodsError | undefined;
    let keyRetried = false;
    for (let answers429 = 0; ; ) {
      // Read where it is used: a key rotated while this process runs is the one sent.
      const key = await keys.current();
      if (key === null) {
        throw new PodsError('not_configured', 0, 'no compute API key: set SVC_API_KEY, or store one with `podhook secrets add --api-key < key.txt`: nothing was sent', { requestId: null, operation });
      }
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
        const waitMs = refused.retryAfterSeconds! * 1000;
        if (clock() + waitMs > deadline) throw rateLimitedAfter(refused, bucket, operation, clock() + waitMs);
        await sleep(waitMs, signal);
        waited = waitMs;
      }
      if (waited > 0) observer?.wait?.({ operation, bucket, waitedMs: waited });
      const started = clock();
      try {
        const answer = await send({ ...request, requestId, signal, apiKey: key });
        const failed = serviceError(answer, [key]);
        if (failed) throw failed;
        observer?.call?.({ operation, bucket, code: 'ok', status: answer.status, requestId: answer.requestId, durationMs: clock() - started });
        return answer;
      } catch (error) {
        if (!(error instanceof PodsError)) throw error;
        observer?.call?.({ operation, bucket, code: error.code, status: error.status, requestId: error.requestId ?? requestId, durationMs: clock() - started });
        if (error.code === 'unauthorized' && !keyRetried) {
          keyRetried = true;
          // A key rotated since it was read: the same request once more with the new one.
          const fresh = await keys.reload().catch(() => null);
          if (fresh !== null && fresh !== key) continue;
        }
        if (error.code !== 'rate_limited') throw withOperation(error, operation);
        refused = error;
        const retryAfter = error.retryAfterSeconds!;
        if (++answers429 > maxRateLimitedAnswers) throw rateLimitedAfter(error, bucket, operation, clock() + retryAfter * 1000);
        // Every process and replica holds back until the service's time, not only this call.
        if (limits) await limits.backOff(bucket, retryAfter);
      } finally {
        // The token comes back a window after the answer: latency cannot crowd the service's window.
        await grant?.settle();
      }
    }
  }

  function answer<N extends PodsCallName>(name: N, args: PodsCalls[N]['args'], options?: PodsCallOptions): Promise<RawServiceAnswer> {
    // Planned (and its input checked) before a token is taken.
    let plan: PodsRequestPlan;
    try {
      plan = planPodsRequest(name, args, wire);
    } catch (error) {
      return Promise.reject(error);
    }
    return call(plan, options);
  }

  return typedPodsCalls(answer);
}

/**
 * The typed calls over an `answer` function, each answer decoded where it is called: the client's
 * own, or a handler thread's stand-in whose `answer` asks the thread that holds the API key.
 */
export function typedPodsCalls(answer: AnsweringPodsClient['answer']): AnsweringPodsClient {
  const typed = async <N extends PodsCallName>(name: N, args: PodsCalls[N]['args'], options?: PodsCallOptions): Promise<PodsCalls[N]['value']> =>
    decodePodsAnswer(name, await answer(name, args, options), args);
  const list = (query: ListPodsQuery = {}, options?: PodsCallOptions) => typed('list', [query], options);
  return {
    answer,
    list,
    pages: (query = {}, { maxPages, ...options } = {}) =>
      walkPages((q, requestId) => list(q, { ...options, requestId }), query, { requestId: options.requestId, maxPages }),
    queueAction: (podId, action, options) => typed('queueAction', [podId, action], options),
    actions: (podId, options) => typed('actions', [podId], options),
    lastResult: (podId, options) => typed('lastResult', [podId], options),
    mintKey: (podId, { name, ...options } = {}) => typed('mintKey', [podId, name], options),
    chatTicket: (podId, options) => typed('chatTicket', [podId], options),
  };
}

function withOperation(error: PodsError, operation: PodsOperation): PodsError {
  error.operation ??= operation;
  return error;
}

function rateLimitedAfter(answer: PodsError, bucket: BucketName, operation: PodsOperation, retryAt: number): PodsRateLimited {
  return new PodsRateLimited({ bucket, retryAt, requestId: answer.requestId, details: answer.details, operation, message: `${answer.message} (rate_limited; retry after ${isoTime(retryAt)})` });
}
