import { DEFAULT_ACCOUNT } from '../pods/api-key-store.js';
import { systemClock, type Clock } from '../clock.js';
import { PodsRateLimited } from '../pods/pods-error.js';
import { DEFAULT_BUCKET_SIZES, type BucketName } from './bucket-size.js';
import { MAX_TOKEN_HOLD_MS, type RateBucketSize, type RateBucketStore } from './rate-bucket-store.js';

export interface AccountLimitsOptions {
  /** Where the buckets are kept: every process and replica on one database shares them. */
  store: RateBucketStore;
  clock?: Clock;
  /** Bucket sizes; the spec's by default (`SVC_WRITE_LIMIT`, `SVC_READ_LIMIT`, `SVC_KEY_MINT_LIMIT`). */
  limits?: Partial<Record<BucketName, RateBucketSize>>;
  /** Waits `ms`; rejects with the signal's reason when it is aborted. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Whose buckets (default `default`). */
  account?: string;
}

export interface AcquireOptions {
  /** The longest this call may wait for its token (a handler: its time left); 0 by default. */
  maxWaitMs?: number;
  signal?: AbortSignal;
  /** Carried by the error when there is no token in time: the call's request id, when it was sent (a 429). */
  requestId?: string | null;
  details?: Record<string, unknown>;
  operation?: string;
}

/** A token granted for one call. */
export interface RateGrant {
  /** How long the call waited for it (ms). */
  waitedMs: number;
  /**
   * Records that the call was answered (or failed) now: the token comes back one window after
   * this rather than after the time it was granted for. Never rejects (a failed write only leaves
   * the token on its granted time).
   */
  settle(): Promise<void>;
}

/** The account's limits, kept together in the store: what the pod client asks before each request. */
export interface AccountLimits {
  /** The bucket sizes in force. */
  readonly sizes: Readonly<Record<BucketName, RateBucketSize>>;
  /**
   * Takes one token of `bucket`: at once, or after waiting for it when it is free within
   * `maxWaitMs` (the token is reserved meanwhile, so no other process takes it). Resolves with the
   * grant, to be settled once the call is answered. Otherwise takes nothing and throws
   * `PodsRateLimited` with `retryAt`.
   */
  acquire(bucket: BucketName, options?: AcquireOptions): Promise<RateGrant>;
  /**
   * The service answered `429 rate_limited`: empties `bucket` in the store until
   * `retryAfterSeconds` from now (at most `MAX_TOKEN_HOLD_MS`), so every process and replica holds
   * back until then, and the first token is back then. The caller then acquires again (wait or throw).
   */
  backOff(bucket: BucketName, retryAfterSeconds: number): Promise<void>;
}

/** Waits `ms`, or rejects with the signal's reason when it is aborted first. */
export function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * The account's three buckets (writes 60/min, reads 240/min, key mints 30/h by default) over the
 * store's `RateBucketStore`: one set for every process and replica that shares the database.
 *
 * @example
 * const limits = createAccountLimits({ store });
 * const grant = await limits.acquire('writes', { maxWaitMs: 5_000 }); // waits up to 5 s, or throws PodsRateLimited
 * try { await send(); } finally { await grant.settle(); }
 */
export function createAccountLimits({ store, clock = systemClock, limits = {}, sleep = abortableSleep, account = DEFAULT_ACCOUNT }: AccountLimitsOptions): AccountLimits {
  const sizes = { ...DEFAULT_BUCKET_SIZES, ...limits };
  // The buckets' time: the database's where replicas share it from several hosts (PostgreSQL), else
  // this clock. Only durations leave it (waits, `retryAt` below is on this clock).
  const bucketNow = store.databaseNow ? () => store.databaseNow!() : async () => clock();
  return {
    sizes,
    async acquire(bucket, { maxWaitMs = 0, signal, requestId = null, details, operation } = {}) {
      signal?.throwIfAborted();
      const now = await bucketNow();
      const take = await store.takeRateTokens({ account, bucket, ...sizes[bucket], now, maxWaitMs: Math.max(0, maxWaitMs) });
      if (!take.granted) throw new PodsRateLimited({ bucket, retryAt: clock() + take.waitMs, requestId, details, operation });
      if (take.waitMs > 0) await sleep(take.waitMs, signal);
      const { tokens } = take;
      return {
        waitedMs: take.waitMs,
        settle: async () => {
          try {
            await store.settleRateTokens({ account, bucket, tokens, at: await bucketNow() });
          } catch {
            // The token stays on its granted time.
          }
        },
      };
    },
    async backOff(bucket, retryAfterSeconds) {
      const forMs = Math.min(MAX_TOKEN_HOLD_MS, Math.max(0, Number.isFinite(retryAfterSeconds) ? retryAfterSeconds * 1000 : MAX_TOKEN_HOLD_MS));
      await store.emptyRateBucket({ account, bucket, ...sizes[bucket], until: (await bucketNow()) + forMs });
    },
  };
}
