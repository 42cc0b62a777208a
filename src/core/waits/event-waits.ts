import type { Clock } from '../clock.js';
import type { NewDelivery } from '../delivery.js';
import type { DispatchSubscriber } from '../dispatch/dispatch-events.js';
import type { PodLocator } from '../pods/pod-locator.js';
import { countWork } from '../observability/work-count.js';
import type { WaitAnswer, WaitAsk, WaitedRecord } from './waited-event.js';
import { createWaitersFlag, type WaitersFlag } from './waiters-flag.js';
import type { EventWaitStore, WaitCandidate } from './wait-store.js';

/** Stored deliveries read per page while a wait looks for its match. */
const PAGE = 200;

export interface EventWaitsOptions {
  store: EventWaitStore;
  /** Where each type's pod id is (`orderFields`, or the learned `payloadFields`). */
  locator: Pick<PodLocator, 'podIdOf'>;
  clock: Clock;
  /** How stale this process's "does any run wait" flag may be (DISPATCH_POLL_MS): what another process's new wait waits for to be seen here. */
  refreshMs: number;
  /** `count` runs were made due now (a match arrived): the dispatcher should look (awaited: the Worker keeps its invocation alive for it). */
  onWoken?: (count: number) => Promise<void> | void;
  /** Told how each wait ended here, and of each run a new delivery woke (/metrics). */
  observe?: (outcome: WaitOutcome) => void;
}

/** A wait matched or timed out (in the run that looked), or a run was woken by a new delivery's ingest. */
export type WaitOutcome = 'matched' | 'timed_out' | 'woken';

/** The receiver's side of `ctx.waitForEvent`: a run's wait checked, new deliveries matched against waits, parked runs woken. */
export interface EventWaits {
  /** A run's wait under its claim (its journal's `wait`): recorded, then its first match looked for among the stored deliveries. */
  check(ask: WaitAsk, claimId: string): Promise<WaitAnswer>;
  /** Per new delivery, synchronous: whether it may wake a run (only then is `afterStored` worth running). Nearly free while no one waits. */
  mayWake(delivery: NewDelivery): boolean;
  /** A new delivery's wake: the waits on its pod for its type, received after theirs, made due now. */
  afterStored(delivery: NewDelivery): Promise<void>;
  /** Watches outcomes: a run that parked while a match woke it (it still held the lease) is made due now. */
  subscriber: DispatchSubscriber;
  readonly flag: WaitersFlag;
}

function decode(body: Uint8Array): unknown {
  try {
    return JSON.parse(new TextDecoder().decode(body));
  } catch {
    return undefined;
  }
}

export function createEventWaits({ store, locator, clock, refreshMs, onWoken, observe }: EventWaitsOptions): EventWaits {
  const flag = createWaitersFlag({ anyWaits: () => store.anyWaits(), clock, refreshMs });

  /** The first stored delivery of the wait's types about its pod received after the waiting one. */
  async function firstMatch(ask: WaitAsk): Promise<{ matched: WaitedRecord; traceParent: string | null } | null> {
    let from: WaitCandidate | undefined;
    for (;;) {
      const page = await store.deliveriesAfter({ types: ask.types, afterAt: ask.afterAt, from, limit: PAGE });
      for (const c of page) {
        const payload = decode(c.body);
        if (payload !== undefined && locator.podIdOf(c.eventType, payload) === ask.podId) {
          return { matched: { id: c.eventId, type: c.eventType, signatureTimestamp: c.signatureT, receivedAt: c.receivedAt, payload }, traceParent: c.traceParent };
        }
      }
      if (page.length < PAGE) return null;
      from = page.at(-1);
    }
  }

  const wakeIfWoken = (eventId: string) =>
    void store.wakeIfWoken(eventId, clock()).then(
      (woken) => (woken ? onWoken?.(1) : undefined),
      () => {},
    );

  return {
    flag,
    async check(ask, claimId) {
      const now = clock();
      // Recorded before looking: a match stored after the look finds the wait, and wakes it.
      const put = await store.putWait({ ...ask, createdAt: now }, claimId);
      if (!put.recorded) throw new Error(`lease lost: wait "${ask.name}" was not recorded, another claim holds the delivery`);
      flag.set();
      const found = await firstMatch(ask);
      if (found) {
        await store.dropWait(ask.eventId, ask.handler, ask.seq);
        observe?.('matched');
        return found;
      }
      if (now >= ask.untilAt) {
        await store.dropWait(ask.eventId, ask.handler, ask.seq);
        observe?.('timed_out');
        return { timedOut: true };
      }
      return { parkUntil: put.created ? Math.min(ask.untilAt, now + flag.firstLookMs) : ask.untilAt };
    },
    mayWake: (d) => d.status === 'queued' && flag.maybe() && locator.podIdOf(d.eventType, d.payload) !== null,
    async afterStored(d) {
      countWork('wait_check');
      if (!(await flag.read())) return;
      const podId = locator.podIdOf(d.eventType, d.payload);
      if (podId === null) return;
      const waits = (await store.waitsOnPod(podId)).filter((w) => w.afterAt < d.receivedAt && w.types.includes(d.eventType));
      if (waits.length === 0) return;
      const woken = await store.wakeWaits(waits, d.eventId, clock());
      for (let i = 0; i < woken.length; i++) observe?.('woken');
      if (woken.length > 0) await onWoken?.(woken.length);
    },
    subscriber: {
      deliveryFinished(_type, status, { eventId }) {
        if ((status === 'queued' || status === 'failed') && flag.maybe()) wakeIfWoken(eventId);
      },
    },
  };
}
