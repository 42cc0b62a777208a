import type { ApiKeyStore } from './api-key-store.js';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import { createAccountLimits, type AccountLimits } from '../limits/account-limits.js';
import type { RateBucketStore } from '../limits/rate-bucket-store.js';
import { createPodsClient, type AnsweringPodsClient, type PodsClientOptions } from './pods-client.js';
import { createApiKeySource, resolveApiKey, type ResolvedApiKey } from './resolve-api-key.js';

/** The pod client as the configuration and the store make it, or why it cannot be made. */
export type ConfiguredPods =
  | { ok: true; client: AnsweringPodsClient; limits: AccountLimits; keySource: ResolvedApiKey['source'] }
  | { ok: false; missing: 'SVC_BASE_URL' | 'api_key'; message: string };

export interface ConfiguredPodsOptions extends Pick<PodsClientOptions, 'fetch' | 'observer' | 'userAgent' | 'maxWaitMs' | 'timeoutMs' | 'sleep' | 'maxAnswerBytes'> {
  /** `Config.pods`: the base URL, the key from `SVC_API_KEY`, the bucket sizes and the names the spec does not show. */
  config: Config['pods'];
  /** The buckets and the stored key: every process on this database shares them. */
  store: RateBucketStore & ApiKeyStore;
  clock?: Clock;
}

/**
 * The pod client for this deployment: `SVC_BASE_URL`, the API key (`SVC_API_KEY`, else the stored
 * one: there must be one now, and it is read again where it is used, so a rotation reaches the
 * client within `API_KEY_TTL_MS`), the account's limits in the store, the configured names. What
 * `podhook pods` and the admin API's report use, and what a handler's `ctx.pods` is made from.
 *
 * @example
 * const pods = await configuredPods({ config: config.pods, store });
 * if (pods.ok) await pods.client.queueAction(podId, 'restart');
 */
export async function configuredPods({ config, store, clock, ...client }: ConfiguredPodsOptions): Promise<ConfiguredPods> {
  if (!config.baseUrl) {
    return { ok: false, missing: 'SVC_BASE_URL', message: 'SVC_BASE_URL is not set: the compute host, e.g. SVC_BASE_URL=https://compute.example.com' };
  }
  const key = await resolveApiKey({ configured: config.apiKey, store });
  if (!key) {
    return {
      ok: false,
      missing: 'api_key',
      message: 'no compute API key: set SVC_API_KEY, or store one with `podhook secrets add --api-key < key.txt` (a Worker secret on the Worker: wrangler secret put SVC_API_KEY)',
    };
  }
  const limits = createAccountLimits({ store, clock, limits: config.limits, sleep: client.sleep });
  return {
    ok: true,
    client: createPodsClient({ ...client, baseUrl: config.baseUrl, apiKey: createApiKeySource({ configured: config.apiKey, store, clock }), limits, wire: config.wire, clock }),
    limits,
    keySource: key.source,
  };
}
