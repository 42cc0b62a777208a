import type { Clock } from '../clock.js';
import type { DeliveryStore } from '../delivery-store.js';
import { PodhookError } from '../errors.js';
import { configuredPods, type ConfiguredPodsOptions } from './configured-pods.js';
import type { EventType } from '../events/event-types.js';
import { readHeldPods, type HeldPod } from './held-pods.js';
import type { PodLocator } from './pod-locator.js';
import type { PodsCallOptions, PodsClient } from './pods-client.js';
import type { Pod } from './pods-types.js';

/**
 * How the service and podhook disagree about a pod: `unknown_to_podhook` (listed, but podhook holds
 * no event naming it), `destroyed_but_listed` (the last event podhook holds is `pod.destroyed`, yet
 * the service still lists it), `not_listed` (podhook holds events for it, the last not
 * `pod.destroyed`, and the service no longer lists it).
 */
export type PodDrift = 'unknown_to_podhook' | 'destroyed_but_listed' | 'not_listed';

export const POD_DRIFT_KINDS: readonly PodDrift[] = ['unknown_to_podhook', 'destroyed_but_listed', 'not_listed'];

/** One pod in the report: the service's side (null when not listed) beside podhook's. */
export interface PodReportRow {
  pod_id: string;
  listed: boolean;
  name: string | null;
  external_ref: string | null;
  status: string | null;
  created_at: string | null;
  last_event_type: string | null;
  last_event_at: string | null;
  last_event_id: string | null;
  deliveries: number;
  drift: PodDrift | null;
}

/** `podhook pods` and `GET /_podhook/api/pods`: the service's pods beside what podhook holds for each. */
export interface PodsReport {
  generated_at: string;
  /** Pods the service lists, and pods podhook holds events for. */
  listed: number;
  held: number;
  /** Rows per drift kind. */
  drift: Record<PodDrift, number>;
  /** Newest listed first, then the pods only podhook holds (newest event first). With `driftOnly`, only rows with a drift. */
  pods: PodReportRow[];
  /** Where podhook read each delivery's pod id, and what it could not tie to a pod. */
  pod_ids: {
    source: PodLocator['source'];
    /** Types with no known place for the pod id (run `podhook schemas`, or export `orderFields`). */
    unknown_types: EventType[];
    /** Deliveries tied to no pod, by type: their pods may show as `unknown_to_podhook`. */
    unattributed: Record<string, number>;
  };
}

const iso = (ms: number) => new Date(ms).toISOString();

/** Compares the listed pods with the held ones (pure). */
export function comparePods(listed: readonly Pod[], held: ReadonlyMap<string, HeldPod>): PodReportRow[] {
  const rows: PodReportRow[] = [];
  const seen = new Set<string>();
  const heldPart = (h: HeldPod | undefined) => ({
    last_event_type: h?.lastEventType ?? null,
    last_event_at: h ? iso(h.lastEventAt) : null,
    last_event_id: h?.lastEventId ?? null,
    deliveries: h?.deliveries ?? 0,
  });
  for (const pod of listed) {
    const id = pod.id.toLowerCase();
    if (seen.has(id)) continue;
    seen.add(id);
    const h = held.get(id);
    rows.push({
      pod_id: id,
      listed: true,
      name: pod.name ?? null,
      external_ref: pod.external_ref ?? null,
      status: pod.status ?? null,
      created_at: pod.created_at ?? null,
      ...heldPart(h),
      drift: !h ? 'unknown_to_podhook' : h.lastEventType === 'pod.destroyed' ? 'destroyed_but_listed' : null,
    });
  }
  const gone = [...held.values()].filter((h) => !seen.has(h.podId)).sort((a, b) => b.lastEventAt - a.lastEventAt);
  for (const h of gone) {
    rows.push({
      pod_id: h.podId,
      listed: false,
      name: null,
      external_ref: null,
      status: null,
      created_at: null,
      ...heldPart(h),
      drift: h.lastEventType === 'pod.destroyed' ? null : 'not_listed',
    });
  }
  return rows;
}

export interface PodsReportOptions {
  client: Pick<PodsClient, 'pages'>;
  store: Pick<DeliveryStore, 'scan'>;
  locator: PodLocator;
  clock: Clock;
  /** Only the rows where the two disagree. */
  driftOnly?: boolean;
  /** Per page (1 to 100). */
  pageSize?: number;
  /** For each list call: its wait for the read bucket, its signal. */
  call?: Omit<PodsCallOptions, 'requestId'>;
}

/**
 * The service's truth beside podhook's: every pod the account lists (paged, within the read
 * bucket) and every pod podhook holds events for, with where they disagree.
 */
export async function buildPodsReport({ client, store, locator, clock, driftOnly = false, pageSize = 100, call }: PodsReportOptions): Promise<PodsReport> {
  const listed: Pod[] = [];
  for await (const page of client.pages({ pageSize }, call)) listed.push(...page.pods);
  const { pods: held, unattributed } = await readHeldPods(store, locator);
  const rows = comparePods(listed, held);
  const drift = Object.fromEntries(POD_DRIFT_KINDS.map((k) => [k, rows.filter((r) => r.drift === k).length])) as Record<PodDrift, number>;
  return {
    generated_at: iso(clock()),
    listed: rows.filter((r) => r.listed).length,
    held: held.size,
    drift,
    pods: driftOnly ? rows.filter((r) => r.drift !== null) : rows,
    pod_ids: { source: locator.source, unknown_types: locator.unknownTypes, unattributed },
  };
}

/** Makes the report on demand, for the admin API: refuses with `not_configured` (503) when the service cannot be reached as configured. */
export type PodsReporter = (options: { driftOnly: boolean }) => Promise<PodsReport>;

export interface PodsReporterOptions extends Omit<ConfiguredPodsOptions, 'store'> {
  store: ConfiguredPodsOptions['store'] & Pick<DeliveryStore, 'scan'>;
  locator: PodLocator;
  clock: Clock;
  /** The longest a report waits for the read bucket (default 10 s; a request is waiting on it). */
  maxWaitMs?: number;
}

/**
 * The report as a receiver serves it (`GET /_podhook/api/pods`): the client is made at each call,
 * so a key stored with `podhook secrets add --api-key` while it runs is used at once.
 */
export function createPodsReporter({ store, locator, clock, maxWaitMs = 10_000, ...options }: PodsReporterOptions): PodsReporter {
  return async ({ driftOnly }) => {
    const pods = await configuredPods({ ...options, store, clock, maxWaitMs });
    if (!pods.ok) throw new PodhookError('not_configured', 503, `The pods report cannot reach the service: ${pods.message}.`);
    return buildPodsReport({ client: pods.client, store, locator, clock, driftOnly });
  };
}
