import { findNonPublicAddress, isIpLiteral } from './non-public-address.js';

/** Why a webhook URL is refused: a stable code per rule, for code to branch on. */
export type WebhookUrlProblem =
  | 'not_a_url'
  | 'not_https'
  | 'credentials'
  | 'localhost'
  | 'internal_host'
  | 'local_host'
  | 'single_label_host'
  | 'non_public_address';

export type WebhookUrlVerdict =
  | { ok: true; /** The URL as the parser normalised it: what is sent and stored. */ url: string }
  | { ok: false; problem: WebhookUrlProblem; message: string };

export interface ValidateWebhookUrlOptions {
  /**
   * Accept local targets (http, localhost, private addresses, single-label and `.local` /
   * `.internal` names), for the emulator and end-to-end tests. The service itself refuses them.
   * Credentials are refused regardless.
   */
  allowLocal?: boolean;
}

// WHATWG URL parsing drops these before anything else, so the raw checks must too.
const LEADING_TRAILING = /^[\u0000-\u0020]+|[\u0000-\u0020]+$/g;
const TAB_OR_NEWLINE = /[\t\n\r]/g;

/**
 * The authority as written: its userinfo (null when there is no `@`) and host (lower-cased).
 * Needed because the parser forgets empty credentials (`https://@host` and `https://:@host`
 * parse to an empty username and password) and rewrites the host, which messages should quote.
 */
function writtenAuthority(input: string): { userinfo: string | null; host: string } | null {
  const cleaned = input.replace(LEADING_TRAILING, '').replace(TAB_OR_NEWLINE, '');
  // Special schemes skip any run of slashes and backslashes before the authority, which ends
  // at the first `/`, `\`, `?` or `#`; the parser takes everything before its last `@` as userinfo.
  const m = /^[A-Za-z][A-Za-z0-9+.-]*:[/\\]*([^/\\?#]*)/.exec(cleaned);
  if (!m) return null;
  const authority = m[1]!;
  const at = authority.lastIndexOf('@');
  const hostPort = authority.slice(at + 1);
  const host = hostPort.startsWith('[') ? hostPort.slice(0, hostPort.indexOf(']') + 1) : hostPort.replace(/:\d*$/, '');
  return { userinfo: at === -1 ? null : authority.slice(0, at), host: host.toLowerCase() };
}

/**
 * Checks a webhook URL against the service's rules (spec: POST /pods/v1/webhooks): HTTPS only;
 * no credentials (even empty ones); not `localhost` (any case, trailing dot, `*.localhost`),
 * not `.internal` or `.local` names; not a private, loopback, link-local, unspecified,
 * multicast or otherwise non-public IP literal in any spelling the URL parser accepts.
 * Also refused: single-label names (`https://intranet/`), which no public resolver answers.
 *
 * @example
 * validateWebhookUrl('https://0x7f.1/hook')
 * // { ok: false, problem: 'non_public_address',
 * //   message: 'the host 0x7f.1 is the IP address 127.0.0.1, a non-public address (loopback, 127.0.0.0/8): …' }
 */
export function validateWebhookUrl(input: string, { allowLocal = false }: ValidateWebhookUrlOptions = {}): WebhookUrlVerdict {
  const refuse = (problem: WebhookUrlProblem, message: string): WebhookUrlVerdict => ({ ok: false, problem, message });
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    return refuse('not_a_url', `${JSON.stringify(input)} is not an absolute URL (expected https://host/path)`);
  }
  if (url.protocol !== 'https:' && !(allowLocal && url.protocol === 'http:')) {
    return refuse('not_https', `the URL must use https:// (got ${url.protocol}//)`);
  }
  const written = writtenAuthority(input);
  if (written?.userinfo != null || url.username !== '' || url.password !== '') {
    return refuse('credentials', 'the URL must not contain credentials (a user name or password before "@", even an empty one)');
  }
  if (allowLocal) return { ok: true, url: url.href };

  const host = url.hostname;
  // Say what the parser made of the host when it differs from what was written.
  const respelled = written && written.host !== host ? written.host : null;
  if (isIpLiteral(host)) {
    const hit = findNonPublicAddress(host);
    if (!hit) return { ok: true, url: url.href };
    const subject = respelled ? `the host ${respelled} is the IP address ${hit.address},` : `${hit.address} is`;
    return refuse(
      'non_public_address',
      `${subject} a non-public address (${hit.label}, ${hit.range}): the service only delivers to public addresses`,
    );
  }
  const as = respelled ? `the host ${respelled} is ${host}: ` : '';

  const name = host.replace(/\.+$/, '');
  if (name === 'localhost' || name.endsWith('.localhost')) {
    return refuse('localhost', `${as}localhost names are refused: the service cannot reach your machine (use a public https URL, e.g. a tunnel)`);
  }
  if (name === 'internal' || name.endsWith('.internal')) {
    return refuse('internal_host', `${as}.internal names are private to a network and are refused`);
  }
  if (name === 'local' || name.endsWith('.local')) {
    return refuse('local_host', `${as}.local names are link-local (mDNS) and are refused`);
  }
  if (!name.includes('.')) {
    return refuse('single_label_host', `${as}"${name}" is a single-label name, not a public host name`);
  }
  return { ok: true, url: url.href };
}
