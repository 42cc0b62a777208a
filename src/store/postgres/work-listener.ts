import pg from 'pg';
import { WORK_CHANNEL } from './hot-statements.js';

export interface WorkListenerOptions {
  /** Opens the dedicated connection LISTEN needs (not a pooled one: it stays subscribed). */
  connect: () => pg.Client;
  onWork: () => void;
  onError?: (error: Error) => void;
  /** Wait before listening again after the connection is lost. */
  retryMs?: number;
}

/**
 * `LISTEN podhook_work` on a connection of its own: a claim that commits new unleased work wakes
 * this replica's dispatcher at once, so idle replicas need no tight poll. Reconnects when the
 * connection drops; a wake is sent then too, for work committed while it was gone.
 */
export function startWorkListener({ connect, onWork, onError, retryMs = 1000 }: WorkListenerOptions): { stop(): Promise<void> } {
  let client: pg.Client | undefined;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const listen = async () => {
    if (stopped) return;
    const c = connect();
    client = c;
    c.on('notification', (n) => n.channel === WORK_CHANNEL && onWork());
    c.on('error', (error) => onError?.(error));
    c.on('end', () => {
      if (client === c && !stopped) timer = setTimeout(() => void listen(), retryMs).unref();
    });
    try {
      await c.connect();
      await c.query(`listen ${WORK_CHANNEL}`);
      onWork();
    } catch (error) {
      onError?.(error as Error);
      await c.end().catch(() => {});
    }
  };
  void listen();
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await client?.end().catch(() => {});
    },
  };
}
