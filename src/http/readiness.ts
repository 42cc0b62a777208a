import type { MaintenanceStore } from '../core/delivery-store.js';
import type { SecretSource } from '../core/signing/secret-source.js';
import type { ReadinessReport } from './create-app.js';

export interface ReadinessOptions {
  store: Pick<MaintenanceStore, 'ping'>;
  secrets: SecretSource;
  /** What the runtime knows beyond a ping: `ok`, or why the store cannot take deliveries (files gone, commits failing). */
  storeHealth?: () => 'ok' | string;
  /** Whether handlers can run (Node's handler threads: `ok`, or why not): a check of its own when given. */
  handlersHealth?: () => 'ok' | string;
}

/**
 * `GET /readyz` for every runtime: ready when the store answers, at least one signing secret is
 * configured (without one every delivery would be refused with 503) and handlers can run.
 */
export function createReadiness({ store, secrets, storeHealth, handlersHealth }: ReadinessOptions): () => Promise<ReadinessReport> {
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
    if (handlersHealth) checks.handlers = handlersHealth();
    return { ready: Object.values(checks).every((v) => v === 'ok'), checks };
  };
}
