import type { ClaimResult, Delivery, TransferStore } from '../delivery-store.js';
import type { SignatureCrypto } from '../signing/signature-crypto.js';

export interface ImporterOptions {
  store: Pick<TransferStore, 'importDeliveries'>;
  crypto: Pick<SignatureCrypto, 'digest'>;
}

/**
 * Stores exported deliveries as `podhook import` does: one transaction per call, deduplicated on
 * event id, a conflict for signed content stored under another id. Used by `import` and `listen`.
 */
export function createImporter({ store, crypto }: ImporterOptions) {
  return async function importDeliveries(deliveries: readonly Delivery[]): Promise<ClaimResult[]> {
    if (deliveries.length === 0) return [];
    // The same digest the receiver keys replays on: SHA-256 of "<t>.<body>".
    const rows = await Promise.all(deliveries.map(async (d) => ({ ...d, contentDigest: await crypto.digest(String(d.signatureT), d.body) })));
    return store.importDeliveries(rows);
  };
}
