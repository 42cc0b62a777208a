import { parseConfig } from '../core/config.js';
import { openConfiguredStore } from '../store/node-store.js';
import { storeExists } from './store-exists.js';

/**
 * The secret `podhook send` and `podhook trigger` sign with: the one given, else the first of
 * `SVC_WEBHOOK_SECRET`, else the oldest stored in the database by `podhook register` /
 * `podhook secrets add` (the order the receiver reads them). Null when there is none.
 */
export async function resolveSigningSecret(explicit: string | undefined, env: Record<string, string | undefined>): Promise<string | null> {
  if (explicit !== undefined) return explicit;
  const config = parseConfig(env);
  if (config.secrets[0] !== undefined) return config.secrets[0];
  // Never create a database just to look for a secret in it.
  if (!storeExists(config)) return null;
  const { store, close } = await openConfiguredStore(config);
  try {
    return (await store.listSecrets())[0]?.secret ?? null;
  } finally {
    await close();
  }
}
