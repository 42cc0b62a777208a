/**
 * Why a `{base_url}` (`SVC_BASE_URL`), or a URL the pod client is about to call below it, cannot
 * be used, or null. The API key travels in a header, so never in clear text beyond this machine:
 * https, or http only to 127.0.0.1, localhost or [::1] (a local emulator). No user or password in
 * it (a credential of its own would travel with every request). The reason never quotes the
 * value: a URL may carry a password or a token.
 */
export function baseUrlProblem(value: string): string | null {
  let url: URL;
  try {
    url = new URL(value.trim());
  } catch {
    return 'is not a URL (e.g. https://compute.example.com)';
  }
  if (url.username !== '' || url.password !== '') return 'must not carry a user or password (the API key is the only credential sent)';
  const loopback = ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback)) {
    return `must be https:// (http only for a local emulator on 127.0.0.1 or localhost; got ${url.protocol}//${url.host})`;
  }
  return null;
}
