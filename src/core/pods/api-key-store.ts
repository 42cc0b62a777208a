/** The service's compute API key as `podhook secrets add --api-key` keeps it. */
export interface StoredApiKey {
  account: string;
  /** The key itself: sent only as `X-API-Key`, never shown, logged or exported. */
  secret: string;
  /** The first 12 hex of its SHA-256, what `podhook secrets list` shows. */
  fingerprint: string;
  createdAt: number;
}

/**
 * Where the compute API key is kept when it is not in `SVC_API_KEY` (table `api_keys`, one per
 * account). Apart from the signing secrets: a key stored here is never accepted as one.
 */
export interface ApiKeyStore {
  /** Stores the account's key, replacing the one before; resolves true when one was replaced. */
  putApiKey(key: StoredApiKey): Promise<boolean>;
  readApiKey(account?: string): Promise<StoredApiKey | null>;
  /** Resolves true when a key was removed. */
  removeApiKey(account?: string): Promise<boolean>;
}

/** The account name used when a deployment talks to one account. */
export const DEFAULT_ACCOUNT = 'default';

/**
 * The stored key as a list (empty when none is stored): what the redactors add to the secrets no
 * error text may quote, beside the signing secrets (`SecretSourceOptions.loadHidden`, the CLI's).
 */
export async function storedApiKeys(store: Pick<ApiKeyStore, 'readApiKey'>): Promise<string[]> {
  const stored = await store.readApiKey();
  return stored ? [stored.secret] : [];
}
