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
 * The answer to a take. `granted`: the tokens (by number) are the caller's, usable `waitMs` from
 * now (0: at once). Not granted: nothing was taken, and the first token is free in `waitMs`.
 */
export type RateTake = { granted: true; waitMs: number; tokens: number[] } | { granted: false; waitMs: number };

export interface SettleRateTokensOptions extends RateBucketKey {
  /** The tokens a take granted. */
  tokens: readonly number[];
  /** When the call they were taken for was answered (or failed): each is held until one window after it. */
  at: number;
}

export interface EmptyRateBucketOptions extends RateBucketKey, RateBucketSize {
  /** No token is free before this time (epoch ms); from it on they come back one by one, at the bucket's pace. */
  until: number;
}

/**
 * The furthest ahead of now a token is ever held (1 h): a `429`'s wait is bounded by it
 * (`RETRY_AFTER_BOUNDS`) and so is a reservation. A token found held further (a store written
 * before the bound, a clock that jumped) is brought back to it when a take meets it.
 */
export const MAX_TOKEN_HOLD_MS = 3_600_000;

/**
 * The store's side of the account's limits (table `rate_tokens`): the buckets every process and
 * replica on one database share. Each bucket is `capacity` tokens; a token taken at `t` is free
 * again at `t + windowMs`, so no window of `windowMs` ever holds more than `capacity` calls,
 * whatever the alignment of the service's own window (counted from each call's answer once it is
 * settled, so request latency cannot crowd a window at the service). A take is atomic across processes on
 * every backend: one UPDATE that moves the earliest token on (a compare-and-set on PostgreSQL,
 * tried again when another replica moved it first).
 */
export interface RateBucketStore {
  /**
   * Takes `count` tokens when they are free within `maxWaitMs` (at most `MAX_TOKEN_HOLD_MS`),
   * reserving each for the time it is free; otherwise takes none and answers how long until the
   * first one is. Tokens are taken one at a time: when a later one of several is refused, the ones
   * before it stay spent. A take that loses a token to another replica tries the next at once: a
   * race costs a statement, never a refusal.
   */
  takeRateTokens(options: TakeRateTokensOptions): Promise<RateTake>;
  /**
   * Empties a bucket until `until` (what a `429` with `retry_after_seconds` says): every token is
   * held until then at least, the k-th to come back (in the order they would) until
   * `until + k × windowMs / capacity`, so the first is free at `until` and the calls that follow
   * are paced rather than sent in one burst. A token held longer already keeps its time.
   */
  emptyRateBucket(options: EmptyRateBucketOptions): Promise<void>;
  /**
   * Records when the calls that used these tokens were answered: each token comes back one window
   * after that rather than after the time it was taken for. A request reaches the service some time
   * after it is sent (a new connection, a busy process), so counting from the answer keeps each
   * token's uses a window apart *at the service* too. Never moves a token earlier.
   */
  settleRateTokens(options: SettleRateTokensOptions): Promise<void>;
  /**
   * The database server's clock (epoch ms), where replicas on several hosts share the buckets
   * (PostgreSQL): their times are then read there, one clock for all, so a replica whose clock
   * runs fast cannot spend a token early. Absent (SQLite, D1): the caller's clock is used.
   */
  databaseNow?(): Promise<number>;
}
