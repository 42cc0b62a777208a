import { UnavailableError } from '../errors.js';

/**
 * Where the signing secrets come from: the environment (`SVC_WEBHOOK_SECRET`, comma-separated)
 * and the database (`podhook register`, `podhook secrets add`). Stored secrets are re-read when
 * the database says they may have changed, so a new one is accepted without a restart.
 */
export interface SecretSource {
  getSecrets(): Promise<readonly string[]>;
  /**
   * The secrets read now, not the kept list: what a delivery that matched none of `getSecrets()`
   * is checked against once more before it is refused, so a secret stored since the last read is
   * accepted by its first delivery. Present only where the kept list may lag the database (the
   * Worker keeps it per isolate).
   */
  recheck?(): Promise<readonly string[]>;
  /** Forces a re-read on the next call (after this process changed the stored secrets). */
  invalidate(): void;
  /**
   * Every secret read so far, at once (the configured ones before the first read), and the hidden
   * ones read with them (`loadHidden`): what error text must not quote. Each delivery's check reads the stored ones again when they may have changed,
   * so a secret stored while the process runs is known once a delivery arrived after it. No read
   * of its own: it is called where nothing may wait (and, on the Worker, nothing may outlive the request).
   */
  known(): readonly string[];
}

export interface SecretSourceOptions {
  /** Secrets from the environment, always accepted. */
  configured: readonly string[];
  /** Reads the secrets stored in the database (unless `loadAll` is given). */
  loadStored?: () => Promise<readonly string[]>;
  /**
   * Reads, with each load of the stored secrets, what is stored beside them that error text must
   * not quote but that is no signing secret (the compute API key of `podhook secrets add
   * --api-key`): added to `known()` only, never accepted by `getSecrets()`.
   */
  loadHidden?: () => Promise<readonly string[]>;
  /** Reads both at once (the Worker: one D1 batch), instead of `loadStored` and `loadHidden`. */
  loadAll?: () => Promise<{ stored: readonly string[]; hidden: readonly string[] }>;
  /**
   * Whether the stored secrets may have changed since the last load. Node passes SQLite's
   * `PRAGMA data_version` (cheap and exact); without it the list is re-read every `ttlMs`.
   */
  maybeChanged?: () => boolean;
  /** How long a list read is kept: past it the next caller waits for a new read (from when that read began). */
  ttlMs?: number;
  /**
   * Reads again before `ttlMs` runs out, without making anyone wait: once the list is `afterMs`
   * old, the next caller hands a read to `run` (the Worker starts it after the answer, under that
   * request's `waitUntil`) and goes on with the kept list; the read's result replaces it.
   */
  refreshAhead?: { afterMs: number; run(read: () => Promise<unknown>): void };
  /**
   * Whether callers that find the list stale together share one read (default true). The Worker
   * passes false: one request must not wait on another request's I/O (Workers cancel the waiter
   * when the request that started it ends).
   */
  shareReads?: boolean;
  /** Gives the source a `recheck` (the Worker, whose kept list may lag the database). */
  recheckOnMismatch?: boolean;
  now?: () => number;
}

/** A failed read: the delivery is answered 503 and retried by the sender (never a 401 for a secret that could not be read). */
function unavailable(error: unknown): never {
  if (error instanceof UnavailableError) throw error;
  throw new UnavailableError('The stored signing secrets could not be read; retry later.', 'store_unavailable', { cause: error });
}

/** Splits a comma-separated secret list; blanks dropped, whitespace trimmed. */
export function splitSecrets(value: string | undefined): string[] {
  if (!value) return [];
  return value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

/**
 * Creates a secret source that merges configured and stored secrets, configured first. A read
 * that fails rejects with an `UnavailableError` (503, `store_unavailable`).
 */
export function createSecretSource({
  configured,
  loadStored,
  loadHidden = async () => [],
  loadAll = async () => {
    if (!loadStored) throw new Error('createSecretSource: loadStored or loadAll is required');
    const [stored, hidden] = await Promise.all([loadStored(), loadHidden()]);
    return { stored, hidden };
  },
  maybeChanged,
  ttlMs = 1000,
  refreshAhead,
  shareReads = true,
  recheckOnMismatch = false,
  now = Date.now,
}: SecretSourceOptions): SecretSource {
  let cached: readonly string[] | null = null;
  // Kept through invalidate(): a redaction must not forget a secret while the list is re-read.
  let lastKnown: readonly string[] = configured;
  /** When the read that filled `cached` began: the list is what the database held then, or later. */
  let readAt = -Infinity;
  // One read at a time (shareReads): the requests that find the list stale together share it (at
  // the end of the TTL a whole event-loop turn of requests does), rather than each reading the database.
  let loading: Promise<readonly string[]> | null = null;
  /** When a read ahead began (one at a time; one that never ended stops counting after `ttlMs`). */
  let aheadSince = -Infinity;
  // Moves on invalidate: a read started before it does not fill the cache after it.
  let generation = 0;
  const read = () => {
    const started = generation;
    const at = now();
    return loadAll().then(({ stored, hidden }) => {
      const merged = [...new Set([...configured, ...stored])];
      lastKnown = [...new Set([...lastKnown, ...merged, ...hidden])];
      // A read that began after the kept one (a recheck, a read ahead) replaces it.
      if (started === generation && at >= readAt) {
        cached = merged;
        readAt = at;
      }
      return merged;
    }, unavailable);
  };
  const load = () => {
    if (!shareReads) return read();
    const r: Promise<readonly string[]> = read().finally(() => {
      if (loading === r) loading = null;
    });
    loading = r;
    return r;
  };
  return {
    async getSecrets() {
      if (loading) return loading;
      const t = now();
      const stale = cached === null || (maybeChanged ? maybeChanged() : t - readAt >= ttlMs);
      if (stale) return load();
      if (refreshAhead && t - readAt >= refreshAhead.afterMs && t - aheadSince >= ttlMs) {
        aheadSince = t;
        refreshAhead.run(() => read().then(() => (aheadSince = -Infinity), () => (aheadSince = -Infinity)));
      }
      return cached!;
    },
    ...(recheckOnMismatch && { recheck: read }),
    invalidate() {
      cached = null;
      loading = null;
      generation++;
    },
    known: () => lastKnown,
  };
}
