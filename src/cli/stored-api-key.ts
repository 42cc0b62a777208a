import type { Config } from '../core/config.js';
import { resolveApiKey, type ResolvedApiKey } from '../core/pods/resolve-api-key.js';
import { openConfiguredStore } from '../store/node-store.js';
import { storeExists } from './store-exists.js';

/**
 * The compute API key for a command: `SVC_API_KEY`, else the one `podhook secrets add --api-key`
 * stored in the configured database (opened only when it exists); null when neither is there.
 */
export async function commandApiKey(config: Config): Promise<ResolvedApiKey | null> {
  if (config.pods.apiKey || !storeExists(config)) return resolveApiKey({ configured: config.pods.apiKey });
  const { store, close } = await openConfiguredStore(config);
  try {
    return await resolveApiKey({ configured: null, store });
  } finally {
    await close();
  }
}
