import type { PodEvent } from '../core/events/define-handler.js';
import type { EventType } from '../core/events/event-types.js';
import type { PayloadFields } from '../core/events/payload-types.js';
import type { OrderFieldNames } from '../core/order/order-spec.js';
import { createPodLocator } from '../core/pods/pod-locator.js';
import type { PodPlaces } from '../core/steps/wait-for-event.js';
import { createStepSeal, memoryJournals, type StepJournals, type StepRecord } from '../core/steps/index.js';
import type { WaitAnswer, WaitAsk } from '../core/waits/waited-event.js';

/** A test's durable steps: what runs of a handler recorded, and the clock its sleeps read. */
export interface TestSteps {
  /** Every step recorded so far, as the store would keep them. */
  readonly records: StepRecord[];
  /** The clock steps and sleeps read (epoch ms); a parked run moves it to its wake time. */
  now: number;
  /** The names of the steps whose function ran, in every run so far, in order. */
  readonly ran: string[];
  /** For runHandler. */
  readonly journals: StepJournals;
  /** The seal of sensitive results (a fixed test key unless one is given). */
  readonly seal: ReturnType<typeof createStepSeal>;
  /** The later events handed to waiting runs (`deliver`), as podhook would have stored them. */
  readonly events: PodEvent<EventType, unknown>[];
  /**
   * Hands a later event to the runs that wait (`ctx.waitForEvent`): the next run of a waiting
   * handler gets it if it is of a type it waits for, about its pod, and not received before the
   * waiting event. A wait does not move the clock: move `now` past its timeout to see it time out.
   */
  deliver(event: PodEvent<EventType, unknown>): void;
  /** Where each type carries its pod id (from `orderFields` or `payloadFields`), for waits. */
  readonly locator: PodPlaces;
}

export interface TestStepsOptions {
  /** Where the clock starts (default: now). */
  now?: number;
  /** STEP_ENCRYPTION_KEY for sensitive steps (default: a fixed test key). */
  key?: string;
  /** Your handlers/index.ts `orderFields` (`{ podId: 'pod.id', occurredAt: null }`): where waits read a pod id. */
  orderFields?: OrderFieldNames;
  /** Or the learned `payloadFields` (handlers/_payloads.ts). */
  payloadFields?: PayloadFields;
}

const TEST_KEY = '00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff';

/**
 * Durable steps kept in memory, for `runHandler(handler, event, { steps })`: run the handler, run
 * it again, and see which steps ran and which were given back. A run that parks at a sleep moves
 * `now` to its wake time, so the next run wakes: sleeps advance the clock instead of waiting. A run
 * parked at `ctx.waitForEvent` gets the event handed with `deliver` on its next run, or null once
 * `now` is moved past its timeout.
 *
 * @example
 * const steps = createTestSteps();
 * await runHandler(handler, event, { steps, stopAfterStep: 1 }); // as if the process died there
 * const again = await runHandler(handler, event, { steps });
 * expect(again.steps.replayed).toEqual(['queue diagnose']);
 */
export function createTestSteps({ now = Date.now(), key = TEST_KEY, orderFields, payloadFields }: TestStepsOptions = {}): TestSteps {
  const memory = memoryJournals();
  const locator = createPodLocator({ orderFields, fields: payloadFields });
  const events: PodEvent<EventType, unknown>[] = [];
  const steps: TestSteps = {
    records: memory.records,
    now,
    ran: [],
    seal: createStepSeal(key),
    events,
    locator,
    deliver: (event) => void events.push(event),
    // The kit's journals keep waits too: the first event handed that matches, else the timeout on the kit's clock.
    journals: (run) => ({ ...memory(run), wait: (ask) => Promise.resolve(memoryWait(ask)) }),
  };
  function memoryWait(ask: WaitAsk): WaitAnswer {
    const match = events
      .filter((e) => ask.types.includes(e.type) && e.receivedAt.getTime() >= ask.afterAt && e.id !== ask.eventId && locator.podIdOf(e.type, e.payload) === ask.podId)
      .sort((a, b) => a.receivedAt.getTime() - b.receivedAt.getTime())[0];
    if (match) return { matched: { id: match.id, type: match.type, signatureTimestamp: match.signatureTimestamp, receivedAt: match.receivedAt.getTime(), payload: match.payload } };
    return steps.now >= ask.untilAt ? { timedOut: true } : { parkUntil: ask.untilAt };
  }
  return steps;
}
