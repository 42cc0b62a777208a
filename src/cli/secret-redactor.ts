import type { Config } from '../core/config.js';
import { storedApiKeys, type ApiKeyStore } from '../core/pods/api-key-store.js';
import type { DeliveryStore } from '../core/delivery-store.js';
import { configuredSecrets, createSecretRedactor, type Redact } from '../core/observability/redact-secrets.js';

/**
 * The redactor of a command that runs handlers (`replay`, `listen`): the configured secrets and
 * tokens, the signing secrets and the API key stored in the database (read once: the command is
 * short-lived), and the command's own (`listen`'s remote token).
 */
export async function storedAndConfiguredRedactor(config: Config, store: Pick<DeliveryStore, 'listSecrets'> & Pick<ApiKeyStore, 'readApiKey'>, own: readonly string[] = []): Promise<Redact> {
  const stored = (await store.listSecrets()).map((s) => s.secret);
  const secrets = [...configuredSecrets(config), ...stored, ...(await storedApiKeys(store)), ...own];
  return createSecretRedactor(() => secrets);
}
