import { DEFAULT_ACCOUNT, type ApiKeyStore } from './api-key-store.js';
import { systemClock, type Clock } from '../clock.js';

/** The compute API key in force and where it came from (never the key in a message: only its source). */
export interface ResolvedApiKey {
  key: string;
  source: 'SVC_API_KEY' | 'store';
}

/**
 * The compute API key: `SVC_API_KEY` when set (it wins), else the one `podhook secrets add
 * --api-key` stored; null when neither is there.
 */
export async function resolveApiKey({ configured, store, account = DEFAULT_ACCOUNT }: { configured: string | null; store?: Pick<ApiKeyStore, 'readApiKey'>; account?: string }): Promise<ResolvedApiKey | null> {
  if (configured) return { key: configured, source: 'SVC_API_KEY' };
  const stored = store ? await store.readApiKey(account) : null;
  return stored ? { key: stored.secret, source: 'store' } : null;
}

/** How long a stored key read is used before it is read again: a rotated key reaches every running process within this. */
export const API_KEY_TTL_MS = 1_000;

/** The API key where it is used: read again at most every `API_KEY_TTL_MS`, and at once on demand. */
export interface ApiKeySource {
  /** The key in force (read from the store when the last read is older than the TTL), or null when there is none. */
  current(): Promise<string | null>;
  /** Reads it again now (after the service refused the key: a rotation may have happened since the last read). */
  reload(): Promise<string | null>;
}

export interface ApiKeySourceOptions {
  /** `SVC_API_KEY`: when set, it is the key, always (nothing is read). */
  configured: string | null;
  store?: Pick<ApiKeyStore, 'readApiKey'>;
  account?: string;
  clock?: Clock;
  ttlMs?: number;
}

/**
 * The compute API key as the pod client reads it before each request, as the signing secrets are
 * read: `SVC_API_KEY` when set; else the stored key, read again when the last read is older than
 * `ttlMs` (1 s), so `podhook secrets add --api-key` on another process reaches this one within
 * that, without a restart. Reads in flight are shared.
 */
export function createApiKeySource({ configured, store, account = DEFAULT_ACCOUNT, clock = systemClock, ttlMs = API_KEY_TTL_MS }: ApiKeySourceOptions): ApiKeySource {
  let cached: { key: string | null; at: number } | undefined;
  let loading: Promise<string | null> | undefined;
  const load = (): Promise<string | null> => {
    loading ??= resolveApiKey({ configured, store, account })
      .then((resolved) => {
        cached = { key: resolved?.key ?? null, at: clock() };
        return cached.key;
      })
      .finally(() => (loading = undefined));
    return loading;
  };
  return {
    async current() {
      if (configured) return configured;
      return cached && clock() - cached.at < ttlMs ? cached.key : load();
    },
    async reload() {
      if (configured) return configured;
      await loading?.catch(() => {});
      return load();
    },
  };
}
