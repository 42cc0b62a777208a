import type { HandlerDefinition } from '../core/events/define-handler.js';
import type { EventType } from '../core/events/event-types.js';
import type { DeliveryRow } from '../core/transfer/delivery-export.js';
import type { LogLine } from './capture-logs.js';

export type { DeliveryRow };

export interface TestReceiverOptions {
  /** The handlers under test (your registry, or a few modules). */
  handlers: readonly HandlerDefinition[];
  /** The signing secret `deliver` signs with (default: a random one). */
  secret?: string;
  /** Attempts before a delivery is `dead` (DISPATCH_MAX_ATTEMPTS; default 8). */
  maxAttempts?: number;
  /** Backoff base and cap (RETRY_BASE_MS, RETRY_MAX_MS): short by default so retries settle fast (10, 100). */
  retryBaseMs?: number;
  retryMaxMs?: number;
  /** HANDLER_TIMEOUT_MS (default 30000). */
  handlerTimeoutMs?: number;
  /** WEBHOOK_PATH (default /webhooks). */
  webhookPath?: string;
  /** MAX_BODY_BYTES (default 262144). */
  maxBodyBytes?: number;
  /** How long `settle()` waits before it fails, naming what is still pending (default 10000). */
  settleTimeoutMs?: number;
}


/** One handler's entry in the per-handler ledger of an event. */
export interface HandlerRunRow {
  handler: string;
  /** How many times it ran for this event. */
  attempt: number;
  /** `queued`: an operator's replay marked it to run again and it has not run yet. */
  outcome: 'succeeded' | 'failed' | 'queued' | 'skipped';
  error: string | null;
}

export interface TestReceiver {
  /** The secret deliveries are signed with. */
  readonly secret: string;
  /** The temporary SQLite file (removed by `close()`). */
  readonly databasePath: string;
  /** Posts a delivery signed like the service's to the receiver's ingest route; resolves to its answer. */
  deliver(type: EventType | (string & {}), payload?: unknown, options?: { id?: string }): Promise<{ status: number; body: unknown }>;
  /** Resolves when nothing is queued, running or due within the next second (retries included). */
  settle(): Promise<void>;
  /** Stored deliveries, newest first, as `podhook deliveries --json` prints them. */
  deliveries(): Promise<DeliveryRow[]>;
  /** The per-handler ledger of one event. */
  runs(eventId: string): Promise<HandlerRunRow[]>;
  /** Every log line so far (handlers' and the receiver's), in memory. */
  logs(): LogLine[];
  /** Stops the receiver and removes its temporary database. */
  close(): Promise<void>;
}
