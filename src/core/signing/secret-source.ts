/**
 * Where the signing secrets come from: the environment (`SVC_WEBHOOK_SECRET`, comma-separated)
 * and the database (`podhook register`, `podhook secrets add`). Stored secrets are re-read when
 * the database says they may have changed, so a new one is accepted without a restart.
 */
export interface SecretSource {
  getSecrets(): Promise<readonly string[]>;
  /** Forces a re-read on the next call (after this process changed the stored secrets). */
  invalidate(): void;
}

export interface SecretSourceOptions {
  /** Secrets from the environment, always accepted. */
  configured: readonly string[];
  /** Reads the secrets stored in the database. */
  loadStored: () => Promise<readonly string[]>;
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
  maybeChanged,
  ttlMs = 1000,
  now = Date.now,
}: SecretSourceOptions): SecretSource {
  let cached: readonly string[] | null = null;
  let loadedAt = 0;
  return {
    async getSecrets() {
      const stale = cached === null || (maybeChanged ? maybeChanged() : now() - loadedAt >= ttlMs);
      if (stale) {
        const stored = await loadStored();
        cached = [...new Set([...configured, ...stored])];
        loadedAt = now();
      }
      return cached!;
    },
    invalidate() {
      cached = null;
    },
  };
}
