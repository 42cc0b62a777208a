import { describeStore } from '../core/config.js';
import type { DeliveryStore } from '../core/delivery-store.js';
import { UnavailableError } from '../core/errors.js';
import type { Logger } from '../core/observability/logger.js';
import { createPostgresStore } from '../store/postgres/postgres-store.js';
import { scrubPassword } from './open-store.js';
import { openPostgres } from './postgres-database.js';
import { startWorkListener } from '../store/postgres/work-listener.js';
import pg from 'pg';

export interface PostgresBackendOptions {
  url: string;
  logger: Logger;
  /** Group commit scheduler for claims (the server passes `setImmediate`). */
  schedule?: (flush: () => void) => void;
  /** Backoff between attempts to reach and migrate the database: doubling from `firstRetryMs` up to `maxRetryMs`. */
  firstRetryMs?: number;
  maxRetryMs?: number;
  /** Called when another replica (or this one) commits new work no dispatcher holds (LISTEN/NOTIFY). */
  onWork?: () => void;
}

export interface PostgresBackend {
  /** Every method rejects with a 503 error until the database is reached and migrated. */
  store: DeliveryStore;
  /** Resolves once the database is reached and migrated (never rejects; stops trying on close). */
  ready: Promise<void>;
  close(): Promise<void>;
}

/**
 * The server's PostgreSQL store: it starts answering at once and keeps trying to reach the
 * database (and migrate it, under the advisory lock) with backoff. Until then /readyz and ingest
 * answer 503, so nothing is acknowledged that is not committed.
 */
export function startPostgresBackend({ url, logger, schedule, firstRetryMs = 250, maxRetryMs = 5000, onWork }: PostgresBackendOptions): PostgresBackend {
  const scrub = (error: unknown) => scrubPassword((error as Error).message ?? String(error), url);
  const opened = openPostgres(url, { onError: (error) => logger.warn({ err: scrub(error) }, 'PostgreSQL connection lost') });
  const inner = createPostgresStore(opened.db, { schedule });
  const { database } = describeStore({ databaseUrl: url, databasePath: '' });
  let reached = false;
  let listener: { stop(): Promise<void> } | undefined;
  let stopped = false;
  let wakeSleep: (() => void) | undefined;
  const ready = (async () => {
    for (let delay = firstRetryMs; !stopped; delay = Math.min(delay * 2, maxRetryMs)) {
      try {
        await opened.migrate();
        reached = true;
        if (onWork) {
          listener = startWorkListener({
            connect: () => new pg.Client({ connectionString: url }),
            onWork,
            onError: (error) => logger.warn({ err: scrub(error) }, 'PostgreSQL LISTEN connection lost'),
          });
        }
        logger.info({ store: 'postgres', database }, 'store ready');
        return;
      } catch (error) {
        if (stopped) return;
        logger.warn({ store: 'postgres', database, err: scrub(error), retry_in_ms: delay }, 'PostgreSQL not reachable; retrying');
        await new Promise<void>((resolve) => {
          wakeSleep = resolve;
          setTimeout(resolve, delay).unref();
        });
      }
    }
  })();
  const notYet = () => Promise.reject(new UnavailableError('PostgreSQL is not reachable yet; retry later.', 'store_unavailable'));
  const store = Object.fromEntries(
    Object.entries(inner).map(([name, method]) => [
      name,
      (...args: unknown[]) => (reached ? (method as (...a: unknown[]) => Promise<unknown>)(...args) : notYet()),
    ]),
  ) as unknown as DeliveryStore;
  return {
    store,
    ready,
    async close() {
      stopped = true;
      wakeSleep?.();
      await ready;
      await listener?.stop();
      await opened.close();
    },
  };
}
