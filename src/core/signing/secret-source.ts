/**
 * Where the signing secrets come from: the environment (`SVC_WEBHOOK_SECRET`, comma-separated)
 * and the database (`podhook register`, `podhook secrets add`). Stored secrets are re-read when
 * the database says they may have changed, so a new one is accepted without a restart.
 */
export interface SecretSource {
  getSecrets(): Promise<readonly string[]>;
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
  /** Reads the secrets stored in the database. */
  loadStored: () => Promise<readonly string[]>;
  /**
   * Reads, with each load of the stored secrets, what is stored beside them that error text must
   * not quote but that is no signing secret (the compute API key of `podhook secrets add
   * --api-key`): added to `known()` only, never accepted by `getSecrets()`.
   */
  loadHidden?: () => Promise<readonly string[]>;
  /**
   * Whether the stored secrets may have changed since the last load. Node passes SQLite's
   * `PRAGMA data_version` (cheap and exact); without it the list is re-read every `ttlMs`.
   */
  maybeChanged?: () => boolean;
  ttlMs?: number;
  now?: () => number;
}

/** Splits a comma-separated secret list; blanks dropped, whitespace trimmed. */
export function splitSecrets(value: string | undefined): string[] {
  if (!value) return [];
  return value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

/** Creates a secret source that merges configured and stored secrets, configured first. */
export function createSecretSource({
  configured,
  loadStored,
  loadHidden = async () => [],
  maybeChanged,
  ttlMs = 1000,
  now = Date.now,
}: SecretSourceOptions): SecretSource {
  let cached: readonly string[] | null = null;
  // Kept through invalidate(): a redaction must not forget a secret while the list is re-read.
  let lastKnown: readonly string[] = configured;
  let loadedAt = 0;
  // One read at a time: the requests that find the list stale together share it (at the end of
  // the TTL a whole event-loop turn of requests does), rather than each reading the database.
  let loading: Promise<readonly string[]> | null = null;
  // Moves on invalidate: a read started before it does not fill the cache after it.
  let generation = 0;
  const load = () => {
    const started = generation;
    const read: Promise<readonly string[]> = Promise.all([loadStored(), loadHidden()])
      .then(([stored, hidden]) => {
        const merged = [...new Set([...configured, ...stored])];
        lastKnown = [...new Set([...lastKnown, ...merged, ...hidden])];
        if (started === generation) {
          cached = merged;
          loadedAt = now();
        }
        return merged;
      })
      .finally(() => {
        if (loading === read) loading = null;
      });
    loading = read;
    return read;
  };
  return {
    async getSecrets() {
      if (loading) return loading;
      const stale = cached === null || (maybeChanged ? maybeChanged() : now() - loadedAt >= ttlMs);
      return stale ? load() : cached!;
    },
    invalidate() {
      cached = null;
      loading = null;
      generation++;
    },
    known: () => lastKnown,
  };
}
