import { findNonPublicAddress } from '../service-api/non-public-address.js';
import { UsageError } from './command.js';

/** `localhost` names and loopback addresses in any spelling the URL parser accepts. */
function isLoopback(hostname: string): boolean {
  const host = hostname.toLowerCase().replace(/\.$/, '');
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  return findNonPublicAddress(host)?.label.endsWith('loopback') === true;
}

/**
 * `podhook listen --from`: https, or http to this machine only, since the admin token must not
 * cross a network in clear; no credentials in the URL. Throws a UsageError that never echoes it.
 */
export function remoteUrl(value: string | undefined): URL {
  if (value === undefined) throw new UsageError('give --from URL: the deployed podhook to follow, e.g. https://hooks.example.com');
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError('--from must be an absolute URL, e.g. https://hooks.example.com');
  }
  if (url.username !== '' || url.password !== '') throw new UsageError('--from must not carry credentials: give the token with PODHOOK_ADMIN_TOKEN');
  if (url.protocol === 'https:') return url;
  if (url.protocol === 'http:' && isLoopback(url.hostname)) return url;
  throw new UsageError(`--from must be https:// (http:// only to 127.0.0.1, ::1 or localhost): the admin token would cross the network in clear to ${url.host}`);
}
