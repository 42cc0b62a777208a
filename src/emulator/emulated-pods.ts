import type { Clock } from '../core/clock.js';
import { PodhookError } from '../core/errors.js';
import { ACTIONS_WITH_RESULT, type Pod, type PodAction, type QueuedAction } from '../core/pods/pods-types.js';

/** A pod as the emulator keeps it: the list item without its endpoint (made from the request's origin). */
export type EmulatedPod = Omit<Pod, 'endpoint'>;

/** One action queued at the emulator, for the tests' log (`GET /_emulator/actions`). */
export interface QueuedActionRecord {
  id: string;
  pod_id: string;
  action: PodAction;
  /** The request's `x-request-id` (echoed or generated). */
  request_id: string;
  queued_at: string;
  /** When its output was written back (`diagnose`, `logs`); null before, and for the other actions. */
  result_at: string | null;
}

/** What the poll route keeps per pod: the last output written back. */
export interface LastResult {
  action: PodAction;
  output: string;
  written_at: string;
}

export interface EmulatedPodsOptions {
  clock: Clock;
  /** Pods made at start (default 0), created a minute apart, newest first; the two oldest share a `created_at`. */
  seed?: number;
  /** How long after `diagnose` or `logs` is queued its `last_result` is written: ms, or [min, max] drawn at random (default 60 to 120 s, as the spec says). */
  resultDelayMs?: number | readonly [number, number];
  random?: () => number;
}

/** A page as the list route answers it, before each pod gets its endpoint. */
export interface PodPage {
  pods: EmulatedPod[];
  next_cursor: string | null;
}

export interface EmulatedPods {
  /** Newest first: `created_at` then `id`, both descending; `cursor` from a previous page. Throws `invalid_request` for a cursor it did not make. */
  page(options: { pageSize: number; cursor?: string; externalRef?: string }): PodPage;
  get(id: string): EmulatedPod | undefined;
  all(): EmulatedPod[];
  /** Adds a pod (tests); every field has a default. */
  add(fields?: Partial<EmulatedPod>): EmulatedPod;
  /** Removes a pod, as if destroyed at the service; false when there was none. */
  remove(id: string): boolean;
  /** Queues an action; `diagnose` and `logs` write `last_result` after the delay. */
  queue(podId: string, action: PodAction, requestId: string): QueuedAction;
  /** The poll route's answer for a pod: its actions, newest first, and the last output. */
  poll(podId: string): { actions: PollEntry[]; last_result: LastResult | null };
  /** Every action queued, oldest first. */
  queued(): readonly QueuedActionRecord[];
  /** Stops the timers of outputs not yet written. */
  close(): void;
}

/** An action as the poll route lists it. */
export interface PollEntry {
  id: string;
  action: PodAction;
  queued_at: string;
  result_available: boolean;
  result_at: string | null;
}

const iso = (ms: number) => new Date(ms).toISOString();

/** The cursor is opaque to callers: the last pod's (created_at, id), base64url JSON. */
const encodeCursor = (pod: EmulatedPod) => btoa(JSON.stringify([pod.created_at, pod.id])).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');

function decodeCursor(cursor: string): [number, string] {
  try {
    const [createdAt, id] = JSON.parse(atob(cursor.replace(/-/g, '+').replace(/_/g, '/'))) as unknown[];
    const at = Date.parse(String(createdAt));
    if (typeof id === 'string' && !Number.isNaN(at)) return [at, id];
  } catch {
    // Falls through to the refusal below.
  }
  throw new PodhookError('invalid_request', 400, 'The cursor is not one this service gave out.', { details: { field: 'cursor' } });
}

/** Newest first, ties on `created_at` broken by id (descending): the spec's compound (created_at, id) order. */
const newestFirst = (a: EmulatedPod, b: EmulatedPod) => Date.parse(b.created_at) - Date.parse(a.created_at) || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);

/**
 * The emulator's pods, in memory: listing with the spec's paging (newest first, a cursor compound
 * over `created_at` and `id`, so ties neither repeat nor skip; the `external_ref` filter applied in
 * the query), queued actions, and the output of `diagnose` and `logs` written back after a delay.
 */
export function createEmulatedPods({ clock, seed = 0, resultDelayMs = [60_000, 120_000], random = Math.random }: EmulatedPodsOptions): EmulatedPods {
  const pods = new Map<string, EmulatedPod>();
  const log: QueuedActionRecord[] = [];
  const results = new Map<string, LastResult>();
  const timers = new Set<ReturnType<typeof setTimeout>>();
  let made = 0;

  function add(fields: Partial<EmulatedPod> = {}): EmulatedPod {
    const n = ++made;
    const now = clock();
    const pod: EmulatedPod = {
      id: globalThis.crypto.randomUUID(),
      name: `demo-pod-${n}`,
      slug: `demo-pod-${n}`,
      external_ref: `demo-${n}`,
      status: 'provisioning',
      tier: 'starter',
      model: 'agent-pod',
      ai: { mode: 'managed' },
      capabilities: { endpoint: true, wallet: false, platform_tools: true, connectors: false, channels: false, scheduler: true, backups: true },
      billing: { expires_at: iso(now + 30 * 86_400_000), auto_renew: true, is_trial: false },
      created_at: iso(now),
      ...fields,
    };
    pod.id = pod.id.toLowerCase();
    pods.set(pod.id, pod);
    return pod;
  }

  const start = clock();
  for (let i = 0; i < seed; i++) add({ created_at: iso(start - Math.max(0, Math.min(seed - 2, seed - 1 - i)) * 60_000) });

  const delay = () => (typeof resultDelayMs === 'number' ? resultDelayMs : resultDelayMs[0] + Math.floor(random() * (resultDelayMs[1] - resultDelayMs[0] + 1)));

  return {
    page({ pageSize, cursor, externalRef }) {
      const after = cursor === undefined ? null : decodeCursor(cursor);
      const matching = [...pods.values()]
        .filter((p) => externalRef === undefined || p.external_ref === externalRef)
        .sort(newestFirst)
        .filter((p) => {
          if (!after) return true;
          const at = Date.parse(p.created_at);
          return at < after[0] || (at === after[0] && p.id < after[1]);
        });
      const page = matching.slice(0, pageSize);
      return { pods: page, next_cursor: matching.length > pageSize ? encodeCursor(page.at(-1)!) : null };
    },
    get: (id) => pods.get(id.toLowerCase()),
    all: () => [...pods.values()].sort(newestFirst),
    add,
    remove: (id) => pods.delete(id.toLowerCase()),
    queue(podId, action, requestId) {
      const now = clock();
      const record: QueuedActionRecord = { id: globalThis.crypto.randomUUID(), pod_id: podId, action, request_id: requestId, queued_at: iso(now), result_at: null };
      log.push(record);
      const resultAvailable = ACTIONS_WITH_RESULT.includes(action);
      if (resultAvailable) {
        const timer = setTimeout(() => {
          timers.delete(timer);
          const at = iso(clock());
          record.result_at = at;
          results.set(podId, { action, output: `${action} of ${podId}: emulated output`, written_at: at });
        }, delay());
        timers.add(timer);
      }
      return {
        queued: action,
        result_available: resultAvailable,
        poll: `/pods/v1/pods/${podId}/actions`,
        note: resultAvailable
          ? 'The pod applies it on its next check-in, within about 60 seconds; read its output as last_result from the poll route in one to two minutes.'
          : 'The pod applies it on its next check-in, within about 60 seconds.',
      };
    },
    poll(podId) {
      const actions = log
        .filter((r) => r.pod_id === podId)
        .reverse()
        .map((r) => ({ id: r.id, action: r.action, queued_at: r.queued_at, result_available: ACTIONS_WITH_RESULT.includes(r.action), result_at: r.result_at }));
      return { actions, last_result: results.get(podId) ?? null };
    },
    queued: () => log,
    close() {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
    },
  };
}
