import { SENDER_RETRY_MINUTES } from '../ingest/sender-retry-ladder.js';
import type { DifferenceKind } from '../shapes/check-shapes.js';
import { retryOutlook, type Downtime } from './retry-outlook.js';

/**
 * What an alert is about. `conflict`: deliveries quarantined as conflicts (reliability work);
 * `schema_drift`: a payload that did not fit its type's learned shape.
 */
export type AlertKind = 'dead_letter' | 'handler_failing' | 'downtime' | 'conflict' | 'schema_drift';

/**
 * The JSON podhook POSTs to `ALERT_WEBHOOK_URL`: `text` is one line for people (Slack reads it),
 * `podhook` the same facts for code. Never a body, a header value or a secret.
 */
export interface AlertPayload {
  text: string;
  podhook: { kind: AlertKind; [field: string]: unknown };
}

/** An alert before it is sent: `key` is what rate limiting counts per kind (a handler, an event type). */
export interface Alert {
  kind: AlertKind;
  key: string;
  payload: AlertPayload;
}

export interface DeadLetterFacts {
  eventId: string;
  eventType: string;
  attempts: number;
  /** The handlers that failed on the last attempt, errors already scrubbed. */
  failures: ReadonlyArray<{ handler: string; error: string }>;
}

export interface DeadOnArrivalFacts {
  eventId: string;
  eventType: string;
  /** Why it was stored dead (`empty_body`, `invalid_utf8`, `invalid_json`), already scrubbed. */
  reason: string;
}

export interface HandlerFailingFacts {
  handler: string;
  runs: number;
  failures: number;
  windowMinutes: number;
}

/** One difference of one delivery's payload from its type's learned shape: where and what kind, never a value. */
export interface SchemaDriftFacts {
  eventId: string;
  eventType: string;
  /** The JSONPath of the place (`$.pod.region`). */
  path: string;
  /** The place in the learned shape (`$.pod` for a new field there, `$.usage.*` for a map's values): the rate limit's key, with the type and change. */
  place: string;
  change: DifferenceKind;
}

export interface ConflictFacts {
  events: ReadonlyArray<{ eventId: string; eventType: string }>;
}

/** How many conflicting events are named in the text, and at most in the JSON. */
const TEXT_IDS = 3;
const JSON_IDS = 50;

/** Slack treats `&`, `<` and `>` as markup; anything quoted from an error is escaped. */
export function escapeText(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** `2026-11-25 03:20 UTC`. */
export function formatUtc(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/** `1 d 2 h 5 min`, `47 min`, `40 s`. */
export function formatDuration(ms: number): string {
  if (ms < 60_000) return `${Math.round(ms / 1000)} s`;
  const minutes = Math.floor(ms / 60_000);
  const parts: string[] = [];
  const d = Math.floor(minutes / 1440);
  const h = Math.floor((minutes % 1440) / 60);
  const m = minutes % 60;
  if (d) parts.push(`${d} d`);
  if (h) parts.push(`${h} h`);
  if (m || parts.length === 0) parts.push(`${m} min`);
  return parts.join(' ');
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** A delivery became dead: every failing handler of its last attempt, keyed by the first one (or the type). */
export function deadLetterAlert({ eventId, eventType, attempts, failures }: DeadLetterFacts): Alert {
  const first = failures[0];
  const why = first
    ? failures.map((f) => `${f.handler}: ${f.error}`).join('; ')
    : 'it could not be dispatched (see `podhook deliveries --status dead`)';
  return {
    kind: 'dead_letter',
    key: first?.handler ?? eventType,
    payload: {
      text: escapeText(
        `podhook: delivery ${eventId} (${eventType}) is dead after ${attempts} attempt${attempts === 1 ? '' : 's'}: ${why}. ` +
          `Fix the cause, then \`podhook replay ${eventId}\`.`,
      ),
      podhook: {
        kind: 'dead_letter',
        event_id: eventId,
        event_type: eventType,
        attempts,
        handler: first?.handler ?? null,
        error: first?.error ?? null,
        failures: failures.map((f) => ({ handler: f.handler, error: f.error })),
      },
    },
  };
}

/**
 * An authentic delivery stored `dead` at the door: its body is empty, not UTF-8 or not JSON, so no
 * handler will ever run it. It was answered 200 (refusing would make the sender retry it for 22
 * hours, then disable the webhook), so the sender will not send it again.
 */
export function deadOnArrivalAlert({ eventId, eventType, reason }: DeadOnArrivalFacts): Alert {
  return {
    kind: 'dead_letter',
    key: `arrival:${eventType}`,
    payload: {
      text: escapeText(
        `podhook: delivery ${eventId} (${eventType}) is dead on arrival: ${reason}. It was stored and answered 200, and no handler will run it; ` +
          `look at it with \`podhook deliveries --status dead\` and tell the sender's operator.`,
      ),
      podhook: { kind: 'dead_letter', event_id: eventId, event_type: eventType, attempts: 0, handler: null, error: reason, failures: [], on_arrival: true },
    },
  };
}

/** A handler fails most of its recent runs. */
export function handlerFailingAlert({ handler, runs, failures, windowMinutes }: HandlerFailingFacts): Alert {
  return {
    kind: 'handler_failing',
    key: handler,
    payload: {
      text: escapeText(
        `podhook: handler ${handler} failed ${failures} of its ${runs} runs in the last ${windowMinutes} minutes; ` +
          `deliveries are retried and become dead letters after DISPATCH_MAX_ATTEMPTS.`,
      ),
      podhook: { kind: 'handler_failing', handler, runs, failures, window_minutes: windowMinutes },
    },
  };
}

/** The command that lists the pods where the service and podhook disagree (`podhook pods`). */
export const PODS_DRIFT_COMMAND = 'podhook pods --drift';

/**
 * The receiver was down: for how long, what the sender's ladder does with the deliveries it sent
 * meanwhile and until when, and past about 22.4 hours that the webhook is probably disabled.
 */
export function downtimeAlert(downtime: Downtime): Alert {
  const o = retryOutlook(downtime);
  const down = `podhook was down for ${formatDuration(o.downtimeMs)} (from ${formatUtc(downtime.from)} until ${formatUtc(downtime.until)}).`;
  const ladder = `${SENDER_RETRY_MINUTES.slice(0, -1).join(', ')} and ${SENDER_RETRY_MINUTES.at(-1)} minutes`;
  const outlook = o.probablyDisabled
    ? `That is longer than the service's retries (${ladder}, about 22.4 hours): it has probably disabled the webhook ` +
      `(disabled_by_us_at set around ${formatUtc(o.disabledAround!)}) and sends nothing more until it is re-enabled. ` +
      `Re-enable it in the service's dashboard, or register a new one with \`podhook register\`; ` +
      `deliveries it gave up on are not sent again: run \`${PODS_DRIFT_COMMAND}\` to compare the service's pods with what podhook holds.`
    : `The service retries deliveries it sent meanwhile after ${ladder}: they should arrive by ${formatUtc(o.retriesDueBy ?? downtime.until)}.`;
  return {
    kind: 'downtime',
    key: 'receiver',
    payload: {
      text: `${down} ${outlook}`,
      podhook: {
        kind: 'downtime',
        down_from: iso(downtime.from),
        down_until: iso(downtime.until),
        down_minutes: Math.round(o.downtimeMs / 60_000),
        retry_ladder_minutes: [...SENDER_RETRY_MINUTES],
        retries_due_by: iso(o.retriesDueBy),
        probably_disabled: o.probablyDisabled,
        disabled_around: iso(o.disabledAround),
        // What to run to see what podhook missed; only once the downtime outlasted the ladder.
        check_command: o.probablyDisabled ? PODS_DRIFT_COMMAND : null,
      },
    },
  };
}

/** Deliveries quarantined as conflicts: event ids and types only. */
export function conflictAlert({ events }: ConflictFacts): Alert {
  const named = events.slice(0, TEXT_IDS).map((e) => `${e.eventId} (${e.eventType})`).join(', ');
  const more = events.length > TEXT_IDS ? ` and ${events.length - TEXT_IDS} more` : '';
  return {
    kind: 'conflict',
    key: 'quarantine',
    payload: {
      text: escapeText(
        `podhook: ${events.length} deliver${events.length === 1 ? 'y was' : 'ies were'} quarantined as conflicts: ${named}${more}. ` +
          `Nothing was dispatched for them; inspect them before replaying.`,
      ),
      podhook: {
        kind: 'conflict',
        count: events.length,
        events: events.slice(0, JSON_IDS).map((e) => ({ event_id: e.eventId, event_type: e.eventType })),
      },
    },
  };
}

/**
 * A delivery's payload did not fit its type's learned shape at this place: the type, the path, the
 * kind of change and the delivery; never a value from the body. Keyed by type, change and the
 * learned shape's place, so one place alerts once per interval however many deliveries, or keys
 * of a sender's map, show it.
 */
export function schemaDriftAlert({ eventId, eventType, path, place, change }: SchemaDriftFacts): Alert {
  return {
    kind: 'schema_drift',
    // Keyed by the learned shape's place, not the path: a payload whose keys are ids (a map, new
    // fields) would otherwise raise a new alert for every key of every delivery.
    key: `${eventType} ${change} ${place}`,
    payload: {
      text: escapeText(
        `podhook: ${eventType} payloads changed at ${path} (${change.replace('_', ' ')}), first seen in delivery ${eventId}. ` +
          `It was stored, answered and dispatched as usual. Learn the change: \`podhook schemas\`, review and commit the module, deploy; ` +
          `deliveries its schema refused meanwhile are dead: \`podhook replay --status dead --type ${eventType}\`.`,
      ),
      podhook: { kind: 'schema_drift', event_type: eventType, path, change, event_id: eventId },
    },
  };
}
