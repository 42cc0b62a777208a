/** Which bucket: one account's `writes`, `reads` or `key_mints` (any name a caller gives). */
export interface RateBucketKey {
  account: string;
  bucket: string;
}

/** A bucket's size: `capacity` calls in any window of `windowMs` (60 writes a minute: 60, 60 000). */
export interface RateBucketSize {
  capacity: number;
  windowMs: number;
}

export interface TakeRateTokensOptions extends RateBucketKey, RateBucketSize {
  now: number;
  /** Tokens to take (default 1), each for one call. */
  count?: number;
  /**
   * The longest the caller would wait: a token free within it is taken (reserved for its time),
   * one further off is left alone and only its wait is answered. 0: only a token free now.
   */
  maxWaitMs: number;
}

/**
 * The answer to a take. `granted`: the tokens are the caller's, usable `waitMs` from now (0: at
 * once). Not granted: nothing was taken, and the first token is free in `waitMs`.
 */
export type RateTake = { granted: true; waitMs: number } | { granted: false; waitMs: number };

export interface EmptyRateBucketOptions extends RateBucketKey, RateBucketSize {
  /** No token is free before this time (epoch ms); from it on they come back one by one, at the bucket's pace. */
  until: number;
}

/**
 * The store's side of the account's limits (table `rate_tokens`): the buckets every process and
 * replica on one database share. Each bucket is `capacity` tokens; a token taken at `t` is free
 * again at `t + windowMs`, so no window of `windowMs` ever holds more than `capacity` calls,
 * whatever the alignment of the service's own window. A take is atomic across processes on
 * every backend: one UPDATE that moves the earliest token on (a compare-and-set on PostgreSQL,
 * tried again when another replica moved it first).
 */
export interface RateBucketStore {
  /**
   * Takes `count` tokens when they are free within `maxWaitMs`, reserving each for the time it is
   * free; otherwise takes none and answers how long until the first one is. Tokens are taken one
   * at a time: when a later one of several is refused, the ones before it stay spent.
   */
  takeRateTokens(options: TakeRateTokensOptions): Promise<RateTake>;
  /**
   * Empties a bucket until `until` (what a `429` with `retry_after_seconds` says): every token is
   * held until then at least, the k-th one until `until + k × windowMs / capacity`, so the calls
   * that follow are paced rather than sent in one burst.
   */
  emptyRateBucket(options: EmptyRateBucketOptions): Promise<void>;
}
