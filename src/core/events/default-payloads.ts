import type { EventType } from './event-types.js';

export interface DefaultPayloadOptions {
  /** "Now" in ms since the epoch: the payload's times are set around it. */
  now: number;
  /** The pod the event is about (default: a new random uuid). */
  podId?: string;
}

const DAY_MS = 86_400_000;

/**
 * A pod as the service lists it (spec: Resources, Pod). The service does not publish delivery
 * payloads ("Payload shape of deliveries: not shown"), so these are plausible stand-ins for
 * `podhook trigger`, built from the published resources: `{ pod, ...fields of the event }`.
 */
function pod(id: string, now: number, status: string) {
  return {
    id,
    name: 'demo-pod',
    slug: 'demo-pod',
    external_ref: 'demo-1',
    status,
    tier: 'starter',
    model: 'agent-pod',
    ai: { mode: 'managed' },
    capabilities: { endpoint: true, wallet: false, platform_tools: true, connectors: false, channels: false, scheduler: true, backups: true },
    endpoint: { base_url: `https://pods.example.com/pods/${id}/v1` },
    billing: { expires_at: new Date(now + 30 * DAY_MS).toISOString(), auto_renew: true, is_trial: false },
    created_at: new Date(now - DAY_MS).toISOString(),
  };
}

type PayloadBuilder = (podId: string, now: number) => Record<string, unknown>;

const iso = (ms: number) => new Date(ms).toISOString();

const BUILDERS = {
  'pod.created': (id, now) => ({ pod: { ...pod(id, now, 'provisioning'), created_at: iso(now) } }),
  'pod.active': (id, now) => ({ pod: pod(id, now, 'active') }),
  'pod.destroyed': (id, now) => ({ pod: pod(id, now, 'destroyed'), reason: 'requested by the owner' }),
  'pod.destroy_failed': (id, now) => ({ pod: pod(id, now, 'active'), error: 'the pod did not stop in time; retrying' }),
  'pod.action.queued': (id, now) => ({
    pod: pod(id, now, 'active'),
    action: { queued: 'restart', result_available: false, poll: `/pods/v1/pods/${id}/actions`, note: 'The pod applies it on its next check-in, within about 60 seconds.' },
  }),
  'pod.status.changed': (id, now) => ({ pod: pod(id, now, 'active'), previous_status: 'provisioning' }),
  'pod.renewed': (id, now) => ({ pod: pod(id, now, 'active'), expires_at: iso(now + 30 * DAY_MS), auto_renew: true }),
  'pod.renewal_failed': (id, now) => ({ pod: pod(id, now, 'active'), expires_at: iso(now + 2 * DAY_MS), error: 'payment_failed' }),
  'pod.expiring': (id, now) => ({
    pod: { ...pod(id, now, 'active'), billing: { expires_at: iso(now + 3 * DAY_MS), auto_renew: false, is_trial: true } },
    expires_at: iso(now + 3 * DAY_MS),
    auto_renew: false,
    is_trial: true,
  }),
  'pod.backup.completed': (id, now) => ({
    pod: pod(id, now, 'active'),
    backupId: crypto.randomUUID(),
    storageKey: `backups/${id}/${iso(now).slice(0, 10)}.enc`,
    sizeBytes: 4_194_304,
  }),
  'pod.backup.failed': (id, now) => ({ pod: pod(id, now, 'active'), backupId: crypto.randomUUID(), error: 'upload_expired: the upload URL was not used within 15 minutes' }),
} satisfies Record<EventType, PayloadBuilder>;

/** The shape of one type's default payload (what `podhook trigger` and `testEvent` send). */
export type DefaultPayload<T extends EventType> = ReturnType<(typeof BUILDERS)[T]>;

/** A plausible payload for one of the 11 event types (see `pod()` for why it is a stand-in). */
export function defaultPayload<T extends EventType>(type: T, { now, podId = crypto.randomUUID() }: DefaultPayloadOptions): DefaultPayload<T> {
  return BUILDERS[type](podId, now) as DefaultPayload<T>;
}
