import type { Config } from '../config.js';
import { REDACTED, REDACTED_KEYS } from './redact.js';

/** Text with every secret podhook knows of replaced by `[redacted]`. */
export type Redact = (text: string) => string;

/** Shorter "secrets" are not replaced: they would blank out ordinary words (config refuses none that short). */
export const MIN_SECRET_CHARS = 8;

/** What no error text may quote: the configured signing secrets and tokens (stored secrets come from the store). */
export function configuredSecrets(config: Pick<Config, 'secrets' | 'adminToken' | 'metricsToken'> & Partial<Pick<Config, 'stepEncryptionKey' | 'pods'>>): (string | null | undefined)[] {
  return [...config.secrets, config.adminToken, config.metricsToken, config.stepEncryptionKey, config.pods?.apiKey];
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The secrets' forms as one pattern, longest first (one that contains another is replaced whole); null when there is none. */
function compile(secrets: Iterable<string | null | undefined>): RegExp | null {
  const forms = new Set<string>();
  for (const secret of secrets) {
    if (typeof secret !== 'string' || secret.length < MIN_SECRET_CHARS) continue;
    forms.add(secret);
    forms.add(encodeURIComponent(secret));
  }
  if (forms.size === 0) return null;
  return new RegExp([...forms].sort((a, b) => b.length - a.length).map(escapeRegExp).join('|'), 'g');
}

/**
 * The one redactor of error text and handler log lines, for what is recorded (`last_error`, the
 * run history, step errors), logged, alerted and put on spans. It asks `secrets` for the list on
 * each call and compiles it into one pattern only when the list changed (a secret added while
 * the process runs, `podhook secrets add`, is hidden from then on). Each
 * secret is replaced as written and as a URL would carry it (percent-encoded). Pure: Web APIs only.
 *
 * @example
 * const redact = createSecretRedactor(() => [...secrets.known(), config.adminToken]);
 * redact('GET /x?key=whsec_abc123456 failed'); // 'GET /x?key=[redacted] failed'
 */
export function createSecretRedactor(secrets: () => readonly (string | null | undefined)[]): Redact {
  let seen: (string | null | undefined)[] | undefined;
  let pattern: RegExp | null = null;
  return function redactSecrets(text) {
    const list = secrets();
    if (!sameList(list, seen)) {
      seen = [...list];
      pattern = compile(list);
    }
    if (pattern === null) return text;
    pattern.lastIndex = 0;
    return text.replace(pattern, REDACTED);
  };
}

/** Whether a list holds the same secrets as the copy kept of it (a few comparisons: the list is short). */
function sameList(list: readonly (string | null | undefined)[], seen: readonly (string | null | undefined)[] | undefined): boolean {
  if (seen === undefined || list.length !== seen.length) return false;
  for (let i = 0; i < list.length; i++) if (list[i] !== seen[i]) return false;
  return true;
}

/** A redactor that hides nothing (where no secret is configured, as in tests of other things). */
export const redactNothing: Redact = (text) => text;

/**
 * A receiver's redactor: the signing secrets it knows (configured, and stored ones as last read)
 * and its tokens. Node builds it once for the handler threads and the wiring alike. The list is
 * made again only when the secret source's `known()` changes.
 */
export function receiverRedactor(config: Pick<Config, 'secrets' | 'adminToken' | 'metricsToken'> & Partial<Pick<Config, 'stepEncryptionKey' | 'pods'>>, secrets: { known(): readonly string[] }): Redact {
  const configured = configuredSecrets(config);
  let known: readonly string[] | undefined;
  let all: readonly (string | null | undefined)[] = configured;
  return createSecretRedactor(() => {
    const now = secrets.known();
    if (now !== known) {
      known = now;
      all = [...now, ...configured];
    }
    return all;
  });
}

/**
 * A handler's log fields (plain JSON data: what `loggable` made of them) with every secret in a
 * string replaced at any depth, and every value under a `REDACTED_KEYS` key replaced whole. It
 * changes the data in place: it is a fresh copy made for the line.
 */
export function redactData(value: unknown, redact: Redact): unknown {
  if (typeof value === 'string') return redact(value);
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) value[i] = redactData(value[i], redact);
    return value;
  }
  const obj = value as Record<string, unknown>;
  for (const key in obj) obj[key] = REDACTED_KEYS.has(key) ? REDACTED : redactData(obj[key], redact);
  return obj;
}
