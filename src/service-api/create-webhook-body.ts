import type { EventType } from '../core/events/event-types.js';
import { validateEventTypes } from './validate-event-types.js';
import { validateWebhookUrl, type ValidateWebhookUrlOptions } from './validate-webhook-url.js';

/** The body of `POST /pods/v1/webhooks`. `event_types` omitted means every event. */
export interface CreateWebhookBody {
  url: string;
  event_types?: EventType[];
}

export type CreateWebhookBodyVerdict =
  | { ok: true; body: CreateWebhookBody }
  | { ok: false; message: string; details: { field: 'body' | 'url' | 'event_types'; problem: string; unknown?: string[] } };

/**
 * Checks a create-webhook body with the service's rules: the CLI runs it before sending (so a
 * mistake costs no request and no rate-limit budget) and the emulator answers with it.
 * The URL in the result is the parser's normalised form, the one that was checked.
 */
export function validateCreateWebhookBody(body: unknown, options: ValidateWebhookUrlOptions = {}): CreateWebhookBodyVerdict {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return { ok: false, message: 'the body must be a JSON object', details: { field: 'body', problem: 'not_an_object' } };
  }
  const { url, event_types: eventTypes } = body as Record<string, unknown>;
  if (typeof url !== 'string') {
    return { ok: false, message: 'url is required (a string)', details: { field: 'url', problem: 'missing' } };
  }
  const urlVerdict = validateWebhookUrl(url, options);
  if (!urlVerdict.ok) return { ok: false, message: `url: ${urlVerdict.message}`, details: { field: 'url', problem: urlVerdict.problem } };
  if (eventTypes === undefined) return { ok: true, body: { url: urlVerdict.url } };
  const typesVerdict = validateEventTypes(eventTypes);
  if (!typesVerdict.ok) {
    const problem = typesVerdict.unknown ? 'unknown_event_type' : Array.isArray(eventTypes) && eventTypes.length === 0 ? 'empty' : 'not_a_list';
    return {
      ok: false,
      message: typesVerdict.message,
      details: { field: 'event_types', problem, ...(typesVerdict.unknown && { unknown: typesVerdict.unknown }) },
    };
  }
  return { ok: true, body: { url: urlVerdict.url, event_types: typesVerdict.eventTypes } };
}
