import type { Clock } from '../clock.js';
import type { DispatchInstrument } from '../dispatch/dispatch-instrument.js';
import type { Logger } from '../observability/logger.js';
import {
  conflictAlert,
  deadLetterAlert,
  deadOnArrivalAlert,
  downtimeAlert,
  handlerFailingAlert,
  schemaDriftAlert,
  type Alert,
  type ConflictFacts,
  type SchemaDriftFacts,
} from './alert-message.js';
import { createFailingWindow, type FailingWindow } from './failing-window.js';
import { postAlert, type AlertPost, type PostOutcome, type Sleep } from './post-alert.js';
import { createAlertRateLimit, type AlertRateLimit } from './rate-limit.js';
import type { Downtime } from './retry-outlook.js';
import { redactNothing, type Redact } from '../observability/redact-secrets.js';
import { scrubError } from '../observability/scrub-error.js';

/** The window `handler_failing` looks at. */
export const FAILING_WINDOW_MINUTES = 15;

/** What alerting remembers between alerts: rate limits and recent handler outcomes. */
export interface AlertMemory {
  rateLimit: AlertRateLimit;
  failing: FailingWindow;
}

export interface AlertMemoryOptions {
  clock: Clock;
  /** `ALERT_MIN_INTERVAL_MINUTES` in ms. */
  minIntervalMs: number;
}

/** Fresh memory; the Worker keeps one per isolate, since it builds a runtime per request. */
export function createAlertMemory({ clock, minIntervalMs }: AlertMemoryOptions): AlertMemory {
  return {
    rateLimit: createAlertRateLimit({ clock, minIntervalMs }),
    failing: createFailingWindow({ clock, windowMs: FAILING_WINDOW_MINUTES * 60_000 }),
  };
}

export interface AlerterOptions {
  /** Sends one alert; null when `ALERT_WEBHOOK_URL` is unset (downtime still goes to the log). */
  post: AlertPost | null;
  logger: Logger;
  clock: Clock;
  minIntervalMs: number;
  /** Waits between tries of one alert. */
  sleep?: Sleep;
  retryDelaysMs?: readonly number[];
  /** Keeps a send alive past the current work (the Worker's `waitUntil`); by default it just runs. */
  defer?: (work: Promise<unknown>) => void;
  /** Hides the secrets in an error an alert quotes (`createSecretRedactor`), should a handler's error contain one. */
  redact?: Redact;
  memory?: AlertMemory;
}

export interface Alerter {
  /** Dead letters and failing handlers: subscribes to the dispatcher's events. */
  readonly instrument: DispatchInstrument;
  /** The receiver was down: a warn log line, and an alert. */
  downtime(downtime: Downtime): Promise<void>;
  /** Deliveries quarantined as conflicts (event ids and types only). */
  conflict(events: ConflictFacts['events']): Promise<void>;
  /** A delivery stored `dead` at the door (its body cannot be parsed): a `dead_letter` alert, as a death in dispatch. */
  deadOnArrival(delivery: { eventId: string; eventType: string; reason: string }): Promise<void>;
  /** A payload that did not fit its type's learned shape at one place: `schema_drift`, once per type and path per interval. */
  schemaDrift(facts: SchemaDriftFacts): Promise<void>;
}

const defaultSleep: Sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Alerts to `ALERT_WEBHOOK_URL`: dead letters, failing handlers, downtime, conflicts and payload drift, one per
 * kind and key per interval, each retried a few times. Observer calls return at once: a send
 * runs beside ingest and dispatch, never in their way, and its failure is only logged.
 */
export function createAlerter({
  post,
  logger,
  clock,
  minIntervalMs,
  sleep = defaultSleep,
  retryDelaysMs,
  defer = () => {},
  redact = redactNothing,
  memory = createAlertMemory({ clock, minIntervalMs }),
}: AlerterOptions): Alerter {
  function send(alert: Alert): Promise<void> {
    if (!post) return Promise.resolve();
    const decision = memory.rateLimit.take(alert.kind, alert.key);
    if (!decision.send) return Promise.resolve();
    const { text, podhook } = alert.payload;
    const held = decision.suppressed;
    const payload = held > 0
      ? { text: `${text} (${held} more ${alert.kind} alert${held === 1 ? '' : 's'} for ${alert.key} held back since the last one.)`, podhook: { ...podhook, suppressed: held } }
      : alert.payload;
    const work = postAlert(post, JSON.stringify(payload), { sleep, retryDelaysMs })
      .then((outcome: PostOutcome) => {
        if (outcome.ok) logger.info({ alert: alert.kind, tries: outcome.tries }, 'alert sent');
        else logger.warn({ alert: alert.kind, tries: outcome.tries, status: outcome.status, err: outcome.error }, 'alert not delivered');
      })
      .catch((error: Error) => logger.error({ alert: alert.kind, err: error.message }, 'alert failed'));
    defer(work);
    return work;
  }

  return {
    instrument: { subscriber: {
      handlerFinished(handler, _type, outcome) {
        // A stale run an ordered handler skipped is no failure.
        // Parked at a sleep, or cut short and due again, is no failure either.
        const verdict = memory.failing.record(handler, outcome !== 'succeeded' && outcome !== 'skipped' && outcome !== 'parked' && outcome !== 'interrupted');
        if (verdict) void send(handlerFailingAlert({ ...verdict, windowMinutes: FAILING_WINDOW_MINUTES }));
      },
      deliveryFinished(eventType, status, detail) {
        if (status !== 'dead') return;
        const failures = detail.failures.map((f) => ({ handler: f.handler, error: scrubError(f.error, redact) }));
        void send(deadLetterAlert({ eventId: detail.eventId, eventType, attempts: detail.attempt, failures }));
      },
    } },
    downtime(downtime) {
      const alert = downtimeAlert(downtime);
      const { kind: _kind, ...fields } = alert.payload.podhook;
      logger.warn({ ...fields, alert: 'downtime' }, alert.payload.text);
      return send(alert);
    },
    conflict(events) {
      return events.length === 0 ? Promise.resolve() : send(conflictAlert({ events }));
    },
    deadOnArrival({ eventId, eventType, reason }) {
      return send(deadOnArrivalAlert({ eventId, eventType, reason: scrubError(reason, redact) }));
    },
    schemaDrift(facts) {
      return send(schemaDriftAlert(facts));
    },
  };
}
