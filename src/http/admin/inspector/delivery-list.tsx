import type { Delivery } from '../../../core/delivery.js';
import { deliveryJson } from '../../../core/transfer/delivery-export.js';
import { iso } from './_format.js';
import { DriftBadge, StatusBadge } from './badges.js';

/** One page of deliveries, each a link to its own page: status, type, when, id, and its last error. */
export function DeliveryList({ rows }: { rows: Delivery[] }) {
  if (rows.length === 0) return <p class="empty">No deliveries match.</p>;
  return (
    <ul class="deliveries">
      {rows.map((d) => {
        const j = deliveryJson(d);
        return (
          <li>
            <a href={`/_podhook/deliveries/${d.eventId}`} data-event-id={d.eventId}>
              <StatusBadge status={d.status} />
              <span class="type">{d.eventType} <DriftBadge drift={d.drift} /></span>
              <time>{iso(d.receivedAt)}</time>
              <code class="id">{d.eventId}</code>
              {j.last_error ? <span class="err">{j.last_error}</span> : null}
            </a>
          </li>
        );
      })}
    </ul>
  );
}
