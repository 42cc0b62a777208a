import type { MaintenanceStore } from '../core/delivery-store.js';
import type { SecretSource } from '../core/signing/secret-source.js';
import type { ReadinessReport } from './create-app.js';

export interface ReadinessOptions {
  store: Pick<MaintenanceStore, 'ping'>;
  secrets: SecretSource;
  /** What the runtime knows beyond a ping: `ok`, or why the store cannot take deliveries (files gone, commits failing). */
  storeHealth?: () => 'ok' | string;
}

/**
 * `GET /readyz` for every runtime: ready when the store answers and at least one signing secret
 * is configured (without one every delivery would be refused with 503).
 */
export function createReadiness({ store, secrets, storeHealth }: ReadinessOptions): () => Promise<ReadinessReport> {
  return async function readiness() {
    const checks: Record<string, string> = {};
    try {
      await store.ping();
      checks.store = storeHealth?.() ?? 'ok';
    } catch (error) {
      checks.store = `unreachable: ${(error as Error).message}`;
    }
    try {
      checks.secret = (await secrets.getSecrets()).length > 0 ? 'ok' : 'no signing secret configured';
    } catch {
      checks.secret = 'unknown: the store could not be read';
    }
    return { ready: Object.values(checks).every((v) => v === 'ok'), checks };
  };
}
