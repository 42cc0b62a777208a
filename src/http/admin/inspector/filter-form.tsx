import { DELIVERY_STATUSES } from '../../../core/delivery.js';

/** The deliveries list's filters as typed (unchecked): the list parses them, the redeliver step passes type and since on. */
export type Filters = { status?: string; type?: string; since?: string; drift?: string };

/** The filters above the deliveries list (a GET form), and the event id box that jumps to one delivery. */
export function FilterForm({ f, eventId }: { f: Filters; eventId?: string }) {
  return (
    <form method="get" action="/_podhook/" class="filters">
      <label>status
        <select name="status">
          <option value="">any</option>
          {DELIVERY_STATUSES.map((s) => <option value={s} selected={f.status === s}>{s}</option>)}
        </select>
      </label>
      <label>type <input name="type" value={f.type ?? ''} placeholder="pod.created" /></label>
      <label>since <input name="since" value={f.since ?? ''} placeholder="2026-05-01T12:00Z" /></label>
      <label>drift
        <select name="drift">
          <option value="">any</option>
          <option value="true" selected={f.drift === 'true'}>drifted</option>
          <option value="false" selected={f.drift === 'false'}>fitting</option>
        </select>
      </label>
      <label>event id <input name="event_id" value={eventId ?? ''} placeholder="uuid" /></label>
      <button type="submit">Filter</button>
    </form>
  );
}
