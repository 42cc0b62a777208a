import type { Webhook } from '../service-api/webhook.js';
import type { Clock } from '../core/clock.js';
import { SENDER_RETRY_MINUTES } from '../core/ingest/sender-retry-ladder.js';
import type { Logger } from '../core/observability/logger.js';
import { createDeliveryPoster } from '../core/transfer/post-delivery.js';
import type { SignatureCrypto } from '../core/signing/signature-crypto.js';

/** A webhook as the emulator keeps it: the resource plus its signing secret. */
export interface EmulatedWebhook extends Webhook {
  secret: string;
}

/** One event to deliver: its body bytes are signed and sent unchanged on every attempt. */
export interface OutgoingEvent {
  id: string;
  type: string;
  body: Uint8Array<ArrayBuffer>;
}

export interface DeliveryAttempt {
  /** 1 for the first try, 2–8 for the seven retries. */
  attempt: number;
  signature_t: number;
  sent_at: string;
  /** The receiver's HTTP status, or null when there was no answer. */
  status: number | null;
  error: string | null;
  duration_ms: number;
}

/**
 * One event's delivery to one webhook. `pending` until a 2xx (`delivered`) or the schedule is
 * exhausted (`gave_up`, which disables the webhook); `cancelled` when its webhook was disabled
 * by another delivery giving up, or the emulator closed.
 */
export interface DeliveryRecord {
  event_id: string;
  event_type: string;
  webhook_id: string;
  url: string;
  status: 'pending' | 'delivered' | 'gave_up' | 'cancelled';
  attempts: DeliveryAttempt[];
  next_attempt_at: string | null;
}

export interface DeliverySchedulerOptions {
  crypto: SignatureCrypto;
  clock: Clock;
  logger: Logger;
  fetch?: typeof fetch;
  /** Multiplies every retry delay: 0.001 turns a minute into 60 ms. */
  timeScale?: number;
  retryScheduleMinutes?: readonly number[];
  /** How long one attempt may take before it counts as failed. */
  timeoutMs?: number;
  /** Records kept for the log; the oldest finished ones are dropped first. */
  maxRecords?: number;
}

export interface DeliveryScheduler {
  /** Sends the event to the webhook now, retrying on the schedule until a 2xx. */
  enqueue(webhook: EmulatedWebhook, event: OutgoingEvent): DeliveryRecord;
  records(): readonly DeliveryRecord[];
  /** Cancels pending retries and aborts attempts in flight (they are not recorded). */
  close(): void;
}

/**
 * The sender side of the service: signs each attempt exactly as the spec says (a fresh `t` per
 * attempt, the same event id and body bytes), treats anything but a 2xx (or no answer within
 * the time limit) as a failure, retries on the spec's schedule scaled by `timeScale`, and when
 * seven retries have failed sets the webhook's `disabled_by_us_at` and stops delivering to it.
 * Keeps `failure_count` (failed attempts since the last success), `last_error` and
 * `last_delivery_at` (the last successful delivery) on the webhook.
 */
export function createDeliveryScheduler({
  crypto,
  clock,
  logger,
  fetch: fetchFn = globalThis.fetch,
  timeScale = 1,
  retryScheduleMinutes = SENDER_RETRY_MINUTES,
  timeoutMs = 10_000,
  maxRecords = 10_000,
}: DeliverySchedulerOptions): DeliveryScheduler {
  const records: DeliveryRecord[] = [];
  const timers = new Map<DeliveryRecord, ReturnType<typeof setTimeout>>();
  let closed = false;
  // Aborts attempts in flight on close, so a receiver that hangs does not hold the process. Like
  // common webhook senders, redirects are not followed: a 3xx is a failed delivery.
  const closing = new AbortController();
  const send: typeof fetch = (input, init) =>
    fetchFn(input, { ...init, redirect: 'manual', signal: init?.signal ? AbortSignal.any([init.signal, closing.signal]) : closing.signal });
  const iso = (ms: number) => new Date(ms).toISOString();

  function keep(record: DeliveryRecord) {
    records.push(record);
    if (records.length > maxRecords) {
      const finished = records.findIndex((r) => r.status !== 'pending');
      records.splice(finished === -1 ? 0 : finished, 1);
    }
  }

  function cancelPending(webhookId: string) {
    for (const [record, timer] of timers) {
      if (record.webhook_id !== webhookId) continue;
      clearTimeout(timer);
      timers.delete(record);
      record.status = 'cancelled';
      record.next_attempt_at = null;
    }
  }

  async function attempt(webhook: EmulatedWebhook, event: OutgoingEvent, record: DeliveryRecord) {
    timers.delete(record);
    if (closed || webhook.disabled_by_us_at !== null) {
      record.status = 'cancelled';
      record.next_attempt_at = null;
      return;
    }
    const number = record.attempts.length + 1;
    const started = clock();
    const t = Math.floor(started / 1000);
    // A fresh `t` on every attempt (the poster signs at send time); the same id and body bytes.
    const post = createDeliveryPoster({ url: webhook.url, secret: webhook.secret, crypto, clock: () => started, fetch: send, timeoutMs });
    const answer = await post({ eventId: event.id, eventType: event.type, body: event.body });
    const status = answer.status;
    const error = status === null ? answer.error ?? 'no answer' : status >= 200 && status <= 299 ? null : `HTTP ${status}`;
    if (closed) {
      record.status = 'cancelled';
      record.next_attempt_at = null;
      return;
    }
    const finished = clock();
    record.attempts.push({ attempt: number, signature_t: t, sent_at: iso(started), status, error, duration_ms: finished - started });
    const log = { event_id: event.id, event_type: event.type, webhook_id: webhook.id, attempt: number, status };

    if (error === null) {
      record.status = 'delivered';
      record.next_attempt_at = null;
      webhook.failure_count = 0;
      webhook.last_delivery_at = iso(finished);
      logger.info({ ...log, outcome: 'delivered' }, 'delivery');
      return;
    }
    webhook.failure_count += 1;
    webhook.last_error = error;
    const retriesDone = number - 1;
    if (retriesDone < retryScheduleMinutes.length) {
      // setTimeout takes at most 2^31 - 1 ms (about 24.8 days); beyond that it would fire at once.
      const delayMs = Math.min(retryScheduleMinutes[retriesDone]! * 60_000 * timeScale, 2 ** 31 - 1);
      record.next_attempt_at = iso(finished + delayMs);
      timers.set(record, setTimeout(() => void attempt(webhook, event, record), delayMs));
      logger.warn({ ...log, outcome: 'failed', error, retry_in_ms: delayMs }, 'delivery');
      return;
    }
    record.status = 'gave_up';
    record.next_attempt_at = null;
    webhook.disabled_by_us_at = iso(finished);
    cancelPending(webhook.id);
    logger.warn({ ...log, outcome: 'gave_up', error }, 'delivery failed after every retry: webhook disabled');
  }

  return {
    enqueue(webhook, event) {
      const record: DeliveryRecord = {
        event_id: event.id,
        event_type: event.type,
        webhook_id: webhook.id,
        url: webhook.url,
        status: 'pending',
        attempts: [],
        next_attempt_at: iso(clock()),
      };
      keep(record);
      timers.set(record, setTimeout(() => void attempt(webhook, event, record), 0));
      return record;
    },
    records: () => records,
    close() {
      closed = true;
      for (const timer of timers.values()) clearTimeout(timer);
      for (const record of timers.keys()) {
        record.status = 'cancelled';
        record.next_attempt_at = null;
      }
      timers.clear();
      closing.abort(new Error('emulator closed'));
    },
  };
}
