import type { Delivery } from '../../../core/delivery.js';
import { deliveryJson } from '../../../core/transfer/delivery-export.js';
import { iso } from './_format.js';
import type { ParkedRun } from '../../../core/steps/step-record.js';
import { DriftBadge, ParkedBadge, StatusBadge } from './badges.js';

/** One page of deliveries, each a link to its own page: status (and when a parked run wakes), type, when, id, and its last error. */
export function DeliveryList({ rows, parked }: { rows: Delivery[]; parked: ReadonlyMap<string, ParkedRun> }) {
  if (rows.length === 0) return <p class="empty">No deliveries match.</p>;
  return (
    <ul class="deliveries">
      {rows.map((d) => {
        const j = deliveryJson(d);
        const sleep = parked.get(d.eventId);
        return (
          <li>
            <a href={`/_podhook/deliveries/${d.eventId}`} data-event-id={d.eventId}>
              <span>
                <StatusBadge status={d.status} />
                {sleep ? <> <ParkedBadge wakeAt={sleep.wakeAt} step={sleep.step} waitingFor={sleep.waitingFor?.types} /></> : null}
              </span>
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
