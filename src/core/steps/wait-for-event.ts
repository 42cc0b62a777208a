import { EVENT_TYPES, type EventType } from '../events/event-types.js';
import { parseSpan } from './time-or-duration.js';
import { StepError } from './step-errors.js';

/** The longest wait: 30 days, as the longest sleep. */
export const MAX_WAIT_MS = 30 * 86_400_000;

/** What `ctx.waitForEvent` waits for. */
export interface WaitForEventOptions<T extends EventType = EventType> {
  /** The event type, or types, that end the wait. */
  type: T | readonly T[];
  /** How long to wait: ms, or `'90s'`, `'30m'`, `'1h'`, `'1d'` (up to 30 days); then it resolves null. */
  timeout: number | string;
  /** The pod the later event is about (default: the running event's pod, where podhook knows its place). */
  pod?: string;
}

/** The running event, as a wait needs it: its type and payload (its pod), and when it was received. */
export interface WaitSource {
  type: string;
  receivedAt: number;
  payload: unknown;
}

/** Where each event type carries its pod id, as a wait reads it (`createPodLocator` gives one). */
export interface PodPlaces {
  /** The pod id of a payload of `type` (lower-cased), or null. */
  podIdOf(type: string, payload: unknown): string | null;
  /** The types with no known place. */
  readonly unknownTypes: readonly string[];
}

/** What a wait was asked for, checked: the pod, the types, the timeout in ms. */
export interface WaitPlan {
  podId: string;
  types: EventType[];
  timeoutMs: number;
}

const placeHint =
  "podhook reads a pod id where `orderFields` names it (handlers/index.ts: export const orderFields = { podId: 'pod.id', occurredAt: null }) or where `podhook schemas` learned it (payloadFields)";

/**
 * A wait's options checked at the call, before anything is recorded: known event types, a
 * timeout up to 30 days, and a pod: `pod`, or the running event's, read where podhook knows each
 * type's pod id. A type with no known place is a permanent `StepError` naming how to give one.
 */
export function planWait(name: string, options: WaitForEventOptions, source: WaitSource | undefined, locator: PodPlaces | undefined): WaitPlan {
  const fail = (message: string) => new StepError('step_wait', `waitForEvent "${name}": ${message}`, true);
  const list = typeof options?.type === 'string' ? [options.type] : Array.isArray(options?.type) ? [...options.type] : [];
  const unknown = list.filter((t) => !(EVENT_TYPES as readonly string[]).includes(t));
  if (list.length === 0 || unknown.length > 0) throw fail(`type must be an event type or a list of them (${EVENT_TYPES.join(', ')}), not ${JSON.stringify(options?.type)}`);
  const timeoutMs = typeof options.timeout === 'number' || typeof options.timeout === 'string' ? parseSpan(options.timeout) : null;
  if (timeoutMs === null || timeoutMs > MAX_WAIT_MS) throw fail(`timeout ${JSON.stringify(options.timeout)} is not a duration up to 30 days (ms, or '90s', '30m', '1h', '1d')`);
  const unknownTypes: readonly string[] = locator?.unknownTypes ?? EVENT_TYPES;
  const blind = list.filter((t) => unknownTypes.includes(t));
  if (blind.length > 0) throw fail(`podhook does not know where ${blind.join(', ')} carries its pod id, so it cannot match it to a pod: run \`podhook schemas\` on real deliveries, or name the place once; ${placeHint}`);
  if (!source) throw fail('this runner does not know the running event');
  let podId: string | null;
  if (options.pod !== undefined) {
    if (typeof options.pod !== 'string' || options.pod === '') throw fail(`pod must be a pod id (a non-empty string), not ${JSON.stringify(options.pod)}`);
    podId = options.pod.toLowerCase();
  } else {
    if (unknownTypes.includes(source.type)) {
      throw fail(`podhook does not know where ${source.type} carries its pod id, so it cannot tell which pod to wait on: pass \`pod\`, run \`podhook schemas\`, or name the place once; ${placeHint}`);
    }
    podId = locator!.podIdOf(source.type, source.payload);
    if (podId === null) throw fail(`this ${source.type} carries no pod id where podhook reads it; pass \`pod\``);
  }
  return { podId, types: list as EventType[], timeoutMs };
}
