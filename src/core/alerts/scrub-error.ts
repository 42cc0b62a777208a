/** Longest error text an alert quotes. */
export const MAX_ERROR_CHARS = 300;

/**
 * An error as an alert may quote it: one line, at most `MAX_ERROR_CHARS`, every configured secret
 * replaced, and JSON.parse's quote of the body (V8 shows a slice of it) dropped. The dispatcher's
 * own errors carry no body; a handler's message is its author's text.
 */
export function scrubError(error: string, secrets: readonly string[] = []): string {
  let text = error.replace(/\s+/g, ' ').trim();
  if (text.startsWith('invalid_json')) text = 'invalid_json: the stored body is not valid JSON';
  for (const secret of secrets) {
    // A very short "secret" would blank out ordinary words; config refuses none, so guard here.
    if (secret.length >= 8) text = text.split(secret).join('[redacted]');
  }
  return text.length > MAX_ERROR_CHARS ? `${text.slice(0, MAX_ERROR_CHARS - 1)}…` : text;
}
