import type { Config } from '../config.js';
import { REDACTED } from './redact.js';

/** Text with every secret podhook knows of replaced by `[redacted]`. */
export type Redact = (text: string) => string;

/** Shorter "secrets" are not replaced: they would blank out ordinary words (config refuses none that short). */
export const MIN_SECRET_CHARS = 8;

/** What no error text may quote: the configured signing secrets and tokens (stored secrets come from the store). */
export function configuredSecrets(config: Pick<Config, 'secrets' | 'adminToken' | 'metricsToken'> & Partial<Pick<Config, 'stepEncryptionKey' | 'pods'>>): (string | null | undefined)[] {
  return [...config.secrets, config.adminToken, config.metricsToken, config.stepEncryptionKey, config.pods?.apiKey];
}

/**
 * The one redactor of error text, for what is recorded (`last_error`, the run history), logged,
 * alerted and put on spans. It asks `secrets` for the list each time, so a secret added while
 * the process runs (`podhook secrets add`) is hidden from then on without building it again.
 * Each secret is replaced as written and as a URL would carry it (percent-encoded), longest first
 * (one that contains another is replaced whole). Pure: Web APIs only.
 *
 * @example
 * const redact = createSecretRedactor(() => [...secrets.known(), config.adminToken]);
 * redact('GET /x?key=whsec_abc123456 failed'); // 'GET /x?key=[redacted] failed'
 */
export function createSecretRedactor(secrets: () => Iterable<string | null | undefined>): Redact {
  return function redactSecrets(text) {
    const forms = new Set<string>();
    for (const secret of secrets()) {
      if (typeof secret !== 'string' || secret.length < MIN_SECRET_CHARS) continue;
      forms.add(secret);
      forms.add(encodeURIComponent(secret));
    }
    let out = text;
    for (const form of [...forms].sort((a, b) => b.length - a.length)) {
      if (out.includes(form)) out = out.split(form).join(REDACTED);
    }
    return out;
  };
}

/** A redactor that hides nothing (where no secret is configured, as in tests of other things). */
export const redactNothing: Redact = (text) => text;

/**
 * A receiver's redactor: the signing secrets it knows (configured, and stored ones as last read)
 * and its tokens. Node builds it once for the handler threads and the wiring alike.
 */
export function receiverRedactor(config: Pick<Config, 'secrets' | 'adminToken' | 'metricsToken'> & Partial<Pick<Config, 'stepEncryptionKey' | 'pods'>>, secrets: { known(): Iterable<string> }): Redact {
  return createSecretRedactor(() => [...secrets.known(), ...configuredSecrets(config)]);
}
