import pg from 'pg';
import { describeStore } from '../../core/config.js';
import type { DeliveryStore } from '../../core/delivery-store.js';
import { UnavailableError } from '../../core/errors.js';
import type { ServerStore, ServerStoreOptions } from '../server-store.js';
import { createPostgresStore, openPostgres, scrubPassword } from './open-postgres.js';
import { startWorkListener } from './work-listener.js';

export interface PostgresServerStoreOptions extends ServerStoreOptions {
  /** Backoff between attempts to reach and migrate the database: doubling from `firstRetryMs` up to `maxRetryMs`. */
  firstRetryMs?: number;
  maxRetryMs?: number;
}

/**
 * The Node server's PostgreSQL store: it answers at once and keeps trying to reach the database
 * (and migrate it, under the advisory lock) with backoff. Until then every store method rejects
 * with a 503 error, so /readyz and ingest answer 503 and nothing is acknowledged that is not
 * committed. Once reached, it LISTENs for work other replicas commit (`onWork`).
 */
export function openPostgresServerStore(
  url: string,
  { logger, onWork, firstRetryMs = 250, maxRetryMs = 5000 }: PostgresServerStoreOptions,
): ServerStore {
  const scrub = (error: unknown) => scrubPassword((error as Error).message ?? String(error), url);
  const opened = openPostgres(url, { onError: (error) => logger.warn({ err: scrub(error) }, 'PostgreSQL connection lost') });
  const inner = createPostgresStore(opened.db, { schedule: setImmediate });
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
    assertUsable() {},
    health: () => 'ok',
    checkpointProgress: () => undefined,
    start() {},
    async close() {
      stopped = true;
      wakeSleep?.();
      await ready;
      await listener?.stop();
      await opened.close();
    },
  };
}
