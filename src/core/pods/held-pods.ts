import type { DeliveryStore } from '../delivery-store.js';
import { scanDeliveries } from '../transfer/scan-deliveries.js';
import type { PodLocator } from './pod-locator.js';

/** What podhook holds for one pod: its last event received, and how many deliveries name it. */
export interface HeldPod {
  podId: string;
  lastEventType: string;
  /** When that delivery was received (epoch ms). */
  lastEventAt: number;
  lastEventId: string;
  deliveries: number;
}

/** Every pod podhook holds deliveries for, and the deliveries it could not tie to a pod. */
export interface HeldPods {
  pods: Map<string, HeldPod>;
  /** Deliveries of a type with no known place for the pod id, or whose payload had none there, by type. */
  unattributed: Record<string, number>;
}

const decoder = new TextDecoder();

/**
 * Reads the stored deliveries newest first (keyset pages) and keeps, per pod id the locator finds,
 * the newest one: its type and receipt time. Quarantined copies (conflicts) do not count. What the
 * store holds is what retention left: processed deliveries older than `RETENTION_DAYS` are gone.
 */
export async function readHeldPods(store: Pick<DeliveryStore, 'scan'>, locator: PodLocator): Promise<HeldPods> {
  const pods = new Map<string, HeldPod>();
  const unattributed: Record<string, number> = {};
  for await (const d of scanDeliveries(store as DeliveryStore, { order: 'desc' }, 500)) {
    if (d.status === 'quarantined') continue;
    let payload: unknown;
    try {
      payload = JSON.parse(decoder.decode(d.body));
    } catch {
      payload = undefined;
    }
    const podId = locator.podIdOf(d.eventType, payload);
    if (podId === null) {
      unattributed[d.eventType] = (unattributed[d.eventType] ?? 0) + 1;
      continue;
    }
    const held = pods.get(podId);
    if (held) held.deliveries++;
    else pods.set(podId, { podId, lastEventType: d.eventType, lastEventAt: d.receivedAt, lastEventId: d.eventId, deliveries: 1 });
  }
  return { pods, unattributed };
}
