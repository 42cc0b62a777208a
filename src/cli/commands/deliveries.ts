import { DELIVERY_STATUSES } from '../../core/delivery.js';
import type { DeliveryRow, WaitingFor } from '../../core/transfer/delivery-export.js';
import { deliveryRows } from '../../core/transfer/delivery-rows.js';
import { parseConfig } from '../../core/config.js';
import { defineCommand, EXIT, UsageError } from '../command.js';
import { openExistingStore, parseFilters } from '../delivery-filters.js';
import { parseEventType } from '../event-arguments.js';
import { formatTable } from '../format-table.js';

export const deliveriesCommand = defineCommand({
  name: 'deliveries',
  summary: 'List stored deliveries, newest first.',
  usage: 'podhook deliveries [--status S] [--type T] [--limit N] [--json]',
  help: `Options:
  --status S   only this status: ${DELIVERY_STATUSES.join(', ')}
  --type T     only this event type, one of the 11 (e.g. pod.created)
  --limit N    at most N rows (default 50)
  --json       a JSON array of objects: event_id, event_type, status, attempts,
               delivery_count, received_at, last_received_at, last_error, signature_t,
               next_attempt_at, processed_at, body_bytes, conflict_with (the stored
               delivery a quarantined one conflicts with), waiting_on (the delivery
               an ordered handler waits for), drift, parked (a queued delivery whose
               handler run sleeps at a durable sleep or waits for another event:
               {handler, step, wake_at, waiting_for: {types, pod_id} or null}; its
               status stays queued); values are whole (the table cuts long ones,
               ending them in ...)

The table shows a queued delivery whose run is parked at a sleep as "parked", with its
wake_at (when it is due again), and one waiting for another event (ctx.waitForEvent) as
"waiting", with its waiting_for (the types, of which pod) and wake_at (its timeout).

Reads DATABASE_URL's PostgreSQL when set, else DATABASE_PATH (default ./data/podhook.db), like
the server.
Exit codes: 0 listed, 1 no database at that path, 2 bad usage or configuration.`,
  options: {
    status: { type: 'string' },
    type: { type: 'string' },
    limit: { type: 'string' },
    json: { type: 'boolean' },
  },
  async run({ values }, io) {
    const { status } = parseFilters({ status: values.status });
    const eventType = values.type === undefined ? undefined : parseEventType(values.type);
    const limitText = values.limit ?? '50';
    if (!/^[1-9]\d{0,5}$/.test(limitText)) throw new UsageError('--limit must be a whole number from 1 to 999999');
    const config = parseConfig(io.env);
    const { store, close } = await openExistingStore(config);
    try {
      const rows = await store.list({
        status,
        eventType,
        limit: Number(limitText),
      });
      const json = await deliveryRows(store, rows);
      if (values.json) {
        io.stdout(`${JSON.stringify(json, null, 2)}\n`);
      } else if (rows.length === 0) {
        io.stdout('No deliveries.\n');
      } else {
        io.stdout(table(json));
      }
      return EXIT.ok;
    } finally {
      await close();
    }
  },
});

function table(rows: DeliveryRow[]): string {
  // A parked run's delivery is stored queued: the table says parked (at a sleep) or waiting (for
  // another event: which, of which pod), and until when.
  const waitingFor = (w: WaitingFor | null | undefined) => (w ? `${w.types.join('|')} of ${w.pod_id}` : null);
  const cells = rows.map((r) => ({
    ...r,
    status: r.parked ? (r.parked.waiting_for ? 'waiting' : 'parked') : r.status,
    wake_at: r.parked?.wake_at ?? null,
    waiting_for: waitingFor(r.parked?.waiting_for),
  }));
  const columns: (keyof (typeof cells)[number])[] = ['received_at', 'event_id', 'event_type', 'status', 'attempts', 'delivery_count'];
  // Only deliveries with a parked run, or a deployment with ordered handlers, need these.
  if (rows.some((r) => r.parked !== null)) columns.push('wake_at');
  if (rows.some((r) => r.parked?.waiting_for)) columns.push('waiting_for');
  if (rows.some((r) => r.waiting_on !== null)) columns.push('waiting_on');
  return formatTable([...columns, 'last_error'], cells);
}
