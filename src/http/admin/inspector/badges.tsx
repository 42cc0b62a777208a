import type { Delivery } from '../../../core/delivery.js';
import { iso } from './_format.js';

/** A delivery's, a run's or a backfill's status as a coloured badge (`s-<status>` in the style sheet). */
export function StatusBadge({ status }: { status: string }) {
  return <span class={`badge s-${status}`}>{status}</span>;
}

/** Shown on a delivery whose payload did not fit its type's learned shape when it arrived. */
export function DriftBadge({ drift }: { drift: Delivery['drift'] }) {
  if (!drift) return null;
  const title = `payload drift: ${drift.map((d) => `${d.path} ${d.kind}`).join(', ')}`;
  return <span class="badge drift" title={title}>drift</span>;
}

/**
 * A queued delivery whose handler run is parked at a durable sleep: when it wakes (the step it
 * sleeps at in its title); at a wait (`waitingFor`: the types), until when it waits.
 */
export function ParkedBadge({ wakeAt, step, waitingFor }: { wakeAt: string | number; step?: string; waitingFor?: readonly string[] }) {
  const at = iso(typeof wakeAt === 'number' ? wakeAt : Date.parse(wakeAt));
  if (waitingFor) {
    return <span class="badge s-parked" title={`waiting at "${step ?? ''}" for ${waitingFor.join(' or ')} until ${at}`}>waiting until {at}</span>;
  }
  return <span class="badge s-parked" title={step ? `parked at sleep "${step}" until ${at}` : `parked until ${at}`}>parked until {at}</span>;
}
