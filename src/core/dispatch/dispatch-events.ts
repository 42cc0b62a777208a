import type { DispatchOutcome } from '../delivery-store.js';
import type { HandlerOutcome } from './handler-result.js';
import type { LeaseLoss } from './lease-keeper.js';

/** What `deliveryFinished` learns about the attempt that ended. */
export interface DeliveryFinishedDetail {
  eventId: string;
  /** The delivery's attempt count once this outcome is stored. */
  attempt: number;
  /** The handlers that failed in this attempt (empty when none failed or none ran). */
  failures: ReadonlyArray<{ handler: string; error: string }>;
}

/**
 * What happens in dispatch, as one typed catalogue: the dispatcher, its runner and its gate emit
 * these; metrics, alerts and tracing subscribe. Arguments are positional, so an emit allocates
 * nothing beyond them on the hot path.
 */
export interface DispatchEventMap {
  /** A handler's call is handed to its runner: `lagMs` is the time from receipt to now. */
  handlerStarted(handler: string, eventType: string, lagMs: number): void;
  /** A handler's call ended (or was settled without a call: skipped, broken). */
  handlerFinished(handler: string, eventType: string, outcome: HandlerOutcome, durationMs: number): void;
  /** An attempt's outcome is stored (not for an attempt interrupted by shutdown: nothing is stored). */
  deliveryFinished(eventType: string, status: DispatchOutcome['status'], detail: DeliveryFinishedDetail): void;
  /**
   * This process lost a delivery's lease: another claim took it over, it could not be renewed in
   * time, or (`outcome_fenced`) the outcome write found another claim. Nothing was recorded.
   */
  leaseLost(reason: LeaseLoss | 'outcome_fenced'): void;
  /** What a handler run did with its durable steps (only for a run that used any). */
  handlerSteps(handler: string, succeeded: number, failed: number, replayed: number): void;
  /** An ordered handler met a stale event (a newer one of its key already ran): it ran it, or skipped it (emitted by the order gate). */
  orderStale(handler: string, action: 'run' | 'skip'): void;
}

export type DispatchEventName = keyof DispatchEventMap;

/** A subscriber: any of the events, each optional. */
export type DispatchSubscriber = Partial<DispatchEventMap>;

/** The event source one dispatcher (or one replay) emits on. */
export interface DispatchEvents {
  /** Adds a subscriber; returns how to remove it. */
  subscribe(subscriber: DispatchSubscriber): () => void;
  emit<K extends DispatchEventName>(name: K, ...args: Parameters<DispatchEventMap[K]>): void;
}

/**
 * A typed event source (graphile-worker's `WorkerEvents` is the model): every event a subscriber
 * has is called, in subscription order, whatever the event's name; none is listed by hand, so a new
 * event reaches every subscriber that has it. A subscriber that throws is not the emitter's
 * problem: the error goes to `onError` and the others still run.
 */
export function createDispatchEvents(
  subscribers: readonly (DispatchSubscriber | undefined)[] = [],
  onError: (error: unknown, event: DispatchEventName) => void = () => {},
): DispatchEvents {
  const listeners = new Map<DispatchEventName, Array<(...args: never[]) => void>>();
  const remove = new Map<DispatchSubscriber, Array<() => void>>();
  function subscribe(subscriber: DispatchSubscriber): () => void {
    const undo: Array<() => void> = [];
    for (const name of Object.keys(subscriber) as DispatchEventName[]) {
      const fn = subscriber[name];
      if (typeof fn !== 'function') continue;
      const list = listeners.get(name) ?? [];
      // Copy on write: an emit in progress keeps the list it started with.
      listeners.set(name, [...list, fn as (...args: never[]) => void]);
      undo.push(() => listeners.set(name, (listeners.get(name) ?? []).filter((f) => f !== fn)));
    }
    remove.set(subscriber, undo);
    return () => {
      for (const u of remove.get(subscriber) ?? []) u();
      remove.delete(subscriber);
    };
  }
  for (const s of subscribers) if (s) subscribe(s);
  return {
    subscribe,
    emit(name, ...args) {
      const list = listeners.get(name);
      if (list === undefined) return;
      for (const fn of list) {
        try {
          (fn as unknown as (...a: typeof args) => void)(...args);
        } catch (error) {
          onError(error, name);
        }
      }
    },
  };
}
