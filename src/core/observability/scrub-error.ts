import { redactNothing, type Redact } from './redact-secrets.js';

/** Longest error text an alert or a span quotes. */
export const MAX_ERROR_CHARS = 300;

/**
 * An error as an alert or a span may quote it: one line, every secret `redact` knows replaced
 * (before it is cut, so no secret is cut in two and missed), at most `MAX_ERROR_CHARS`, and
 * JSON.parse's quote of the body (V8 shows a slice of it) dropped. The dispatcher's own errors
 * carry no body; a handler's message is its author's text.
 */
export function scrubError(error: string, redact: Redact = redactNothing): string {
  let text = error.replace(/\s+/g, ' ').trim();
  if (text.startsWith('invalid_json')) text = 'invalid_json: the stored body is not valid JSON';
  text = redact(text);
  return text.length > MAX_ERROR_CHARS ? `${text.slice(0, MAX_ERROR_CHARS - 1)}…` : text;
}
