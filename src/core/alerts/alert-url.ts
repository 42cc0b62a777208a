/** `127.0.0.0/8`, `::1` and `localhost`: the only hosts an `http:` alert URL may name. */
function isLoopback(hostname: string): boolean {
  const host = hostname.toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost') || host === '[::1]') return true;
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/**
 * Why `ALERT_WEBHOOK_URL` is refused, or null when it is fine: https anywhere, http only to this
 * machine (a plain-http alert would cross the network readable by anyone on the path).
 */
export function alertUrlProblem(value: string): string | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'must be an absolute https:// URL';
  }
  if (url.protocol === 'https:') return null;
  if (url.protocol === 'http:') return isLoopback(url.hostname) ? null : 'may use http:// only for a loopback host (127.0.0.1, ::1, localhost); use https://';
  return 'must be an https:// URL';
}
