import type { NewDelivery } from '../delivery.js';
import { isEventType } from '../events/event-types.js';
import { countWork } from '../observability/work-count.js';

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/**
 * Decides how an authentic delivery is stored. It is never refused for its content (the sender
 * would retry it for 22 hours, then disable the webhook): an unknown type is `ignored`; an
 * empty, non-UTF-8 or non-JSON body is `dead` with its reason; anything else is `queued`.
 */
export function inspectBody(eventType: string, body: Uint8Array): Pick<NewDelivery, 'status' | 'lastError' | 'payload'> {
  if (!isEventType(eventType)) return { status: 'ignored', lastError: `unknown event type "${eventType.slice(0, 100)}"` };
  if (body.length === 0) return { status: 'dead', lastError: 'empty_body: the body is empty' };
  let text: string;
  try {
    text = utf8.decode(body);
  } catch {
    return { status: 'dead', lastError: 'invalid_utf8: the body is not valid UTF-8' };
  }
  let payload: unknown;
  countWork('body_parse');
  try {
    payload = JSON.parse(text);
  } catch (error) {
    return { status: 'dead', lastError: `invalid_json: ${(error as Error).message}` };
  }
  return { status: 'queued', lastError: null, payload };
}
