import { DEFAULT_ACCOUNT, type ApiKeyStore } from '../api-key-store.js';

/** The compute API key in force and where it came from (never the key in a message: only its source). */
export interface ResolvedApiKey {
  key: string;
  source: 'SVC_API_KEY' | 'store';
}

/**
 * The compute API key: `SVC_API_KEY` when set (it wins), else the one `podhook secrets add
 * --api-key` stored; null when neither is there. Read at each call, so a key stored while the
 * server runs is used without a restart.
 */
export async function resolveApiKey({ configured, store, account = DEFAULT_ACCOUNT }: { configured: string | null; store?: Pick<ApiKeyStore, 'readApiKey'>; account?: string }): Promise<ResolvedApiKey | null> {
  if (configured) return { key: configured, source: 'SVC_API_KEY' };
  const stored = store ? await store.readApiKey(account) : null;
  return stored ? { key: stored.secret, source: 'store' } : null;
}
