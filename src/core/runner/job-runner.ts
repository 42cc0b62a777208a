import type { Clock } from '../clock.js';
import type { HandlerContext, HandlerDefinition, PodEvent } from '../events/define-handler.js';
import type { EventType } from '../events/event-types.js';
import { eventOf } from '../events/event-of.js';
import type { HandlerOutcome, HandlerResult } from '../dispatch/handler-result.js';
import { parseDeliveryBody } from '../dispatch/parse-delivery-body.js';
import { describeIssues, RefusedPayload, typedPayloads, type PayloadSchemaMap } from '../dispatch/typed-payload.js';
import type { PodsClient } from '../pods/pods-client.js';
import { countWork } from '../observability/work-count.js';
import { describeRunError, HandlerSteps, isPermanent, parkRequest, RunParked, StepError, type StepJournals, type StepSeal } from '../steps/index.js';
import type { PodPlaces } from '../steps/wait-for-event.js';
import { createHandlerLog, type LineSink } from './handler-log.js';
import type { HandlerCall, HandlerJob, JobResult } from './handler-runner.js';
import { RunContext } from './run-context.js';
import type { CallScope } from './call-scope.js';
import { HandlerTimeoutError, RunningCall } from './running-call.js';

export type { CallScope, StepFrame } from './call-scope.js';

/** What a runner needs for handlers' durable steps. */
export interface RunnerSteps {
  journals: StepJournals;
  seal: StepSeal;
  /** Where each event type carries its pod id (`ctx.waitForEvent`'s pod): `createPodLocator(payloads)`. */
  locator?: PodPlaces;
  /** Wraps each step's function (an instrument's span under the handler's). */
  wrapStep?: <T>(name: string, seq: number, fn: () => Promise<T>) => Promise<T>;
  /** Told of each step given back from the record without running. */
  replayed?: (name: string, seq: number) => void;
}

export interface JobRunnerOptions {
  clock: Clock;
  /** Time limit per handler call, unless the handler sets its own. */
  handlerTimeoutMs: number;
  /** The schemas `podhook schemas` generated: parsed once per job for the handlers without a schema of their own. */
  schemas?: PayloadSchemaMap;
  steps?: RunnerSteps;
  /**
   * The pod client for `ctx.pods` of a call of the delivery `eventId` (the deployment's, made once
   * when a handler first calls the service; in a thread, one that asks the receiver's thread).
   */
  pods?: (eventId: string) => Promise<PodsClient>;
  /** Where each call's log lines go: `lines(job, index)` gives the sink of the job's call at `index`. */
  lines: (job: HandlerJob, index: number) => LineSink;
  /** The lowest handler level written (`handlerLevelFloor(LOG_LEVEL)`). */
  levelFloor: number;
  scope?: CallScope;
}

/** The core that runs handler calls, in whichever thread it is made. */
export interface JobRunner {
  run(job: HandlerJob): Promise<JobResult>;
  abortAll(reason: Error): void;
  abortDelivery(eventId: string, reason: Error): void;
}

const NO_JOURNAL = {
  load: () => Promise.reject(new StepError('step_failed', 'durable steps need a store: this runner has none (the test kit: pass `steps` to runHandler)', true)),
  save: () => Promise.reject(new Error('no step journal')),
};

const NO_SEAL: StepSeal = {
  check() {
    throw new StepError('step_key_missing', 'this runner has no seal for sensitive steps', true);
  },
  seal: () => Promise.reject(new StepError('step_key_missing', 'this runner has no seal for sensitive steps', true)),
  open: () => Promise.reject(new StepError('step_key_missing', 'this runner has no seal for sensitive steps', true)),
};

/**
 * The request id prefix of a run's calls to the service outside any step: the delivery, the
 * handler (FNV-1a of its name) and the attempt, so a call's id is the same for the same call of
 * the same run and new for the next attempt (the call is made again: it is no step).
 */
function runRequestId(eventId: string, handler: string, attempt: number): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < handler.length; i++) h = Math.imul(h ^ handler.charCodeAt(i), 0x01000193);
  return `${eventId}.${(h >>> 0).toString(16).padStart(8, '0')}.${attempt}`;
}

/** Calls a handler; a synchronous throw becomes a rejection. */
function invoke(h: HandlerDefinition, event: PodEvent<EventType, unknown>, ctx: HandlerContext): Promise<unknown> {
  try {
    return Promise.resolve(h.handle(event, ctx));
  } catch (error) {
    return Promise.reject(error);
  }
}

const base = (h: HandlerDefinition, attempt: number): HandlerResult => ({
  handler: h.name, attempt, ok: false, permanent: false, interrupted: false, error: null, durationMs: 0, outcome: 'failed',
});

/**
 * How long a run ended early (time limit, shutdown, lost lease) waits for the steps it started to
 * settle. Under the handler threads' watchdog slack (1 s past the time limit), so a thread that
 * waits is not taken for stuck.
 */
export const STEP_SETTLE_GRACE_MS = 500;

function settledWithin(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([work.then(() => {}, () => {}), new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]).finally(() => clearTimeout(timer));
}

/**
 * The one runner of handler code, the same wherever it runs (the receiver's thread, a handler
 * thread, the Worker's isolate, `podhook replay`, the test kit): a job's body parsed once (or the
 * parse ingest made, when given), its type's generated schema run once, then each call: its own
 * schema, its time limit with an `AbortSignal`, its context (log, steps, pods) and its outcome.
 * It logs nothing of its own: the receiver writes the `handler run` lines from the results.
 */
export function createJobRunner(o: JobRunnerOptions): JobRunner {
  const { clock, handlerTimeoutMs, steps, pods, scope } = o;
  /** Calls still running, each with how to end it early (time limit, shutdown, a lost lease). */
  const running = new Set<RunningCall>();

  async function run(job: HandlerJob): Promise<JobResult> {
    const { delivery } = job;
    let payload: unknown;
    if (job.parsed !== undefined) payload = job.parsed;
    else {
      const parsed = parseDeliveryBody(delivery.body);
      if (!parsed.ok) return { invalidBody: parsed.error };
      payload = parsed.payload;
    }
    const payloadFor = typedPayloads(o.schemas, delivery.eventType, () => payload);
    const calls: (RunningCall | undefined)[] = [];
    const results = await Promise.all(job.calls.map((call, i) => (job.wrap ? job.wrap(call, delivery, () => runCall(job, call, i, payloadFor, calls)) : runCall(job, call, i, payloadFor, calls))));
    if (scope?.settled) {
      // An error a call's code left behind as it returned (a promise left to reject) is reported
      // by the end of this turn: it fails that call, as its own throw would have.
      await scope.settled();
      results.forEach((r, i) => {
        const left = calls[i]?.leftBehind;
        if (left === undefined || !r.ok) return;
        Object.assign(r, { ok: false, outcome: 'failed', error: describeRunError(left), errorName: left instanceof Error ? left.name : undefined });
      });
    }
    for (const call of calls) call?.finish();
    return { results };
  }

  async function runCall(job: HandlerJob, { handler: h, attempt, context }: HandlerCall, index: number, payloadFor: (h: HandlerDefinition) => unknown, calls: (RunningCall | undefined)[]): Promise<HandlerResult> {
    const { delivery } = job;
    const started = clock();
    const result = base(h, attempt);
    const end = (outcome: HandlerOutcome) => {
      result.durationMs = clock() - started;
      result.outcome = outcome;
      return result;
    };
    const refuse = (error: string) => {
      result.permanent = true;
      result.error = error;
      return end('invalid_payload');
    };

    const payload = payloadFor(h);
    let parsed: unknown = payload;
    // Its type's generated schema refused the payload (typed-payload.ts).
    if (payload instanceof RefusedPayload) return refuse(payload.error);
    if (h.schema) {
      countWork('schema_run');
      const check = h.schema.safeParse(payload);
      if (!check.success) return refuse(`invalid_payload: ${describeIssues(check.error)}`);
      parsed = check.data;
    } else if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) {
      return refuse('invalid_payload: the body is not a JSON object');
    }

    const timeoutMs = h.timeoutMs ?? handlerTimeoutMs;
    const call = new RunningCall(delivery.eventId, index, h.name);
    calls[index] = call;
    running.add(call);
    const timer = setTimeout(() => call.end(new HandlerTimeoutError(timeoutMs)), timeoutMs);
    const makeSteps = () =>
      new HandlerSteps({
        eventId: delivery.eventId,
        handler: h.name,
        journal: steps ? steps.journals({ eventId: delivery.eventId, handler: h.name, claimId: job.claimId }) : NO_JOURNAL,
        clock,
        seal: steps?.seal ?? NO_SEAL,
        span: steps?.wrapStep,
        replayed: steps?.replayed,
        scope,
        event: { type: delivery.eventType, receivedAt: delivery.receivedAt, payload },
        locator: steps?.locator,
      });
    // A handler that ignores its signal is no longer awaited after its time limit.
    const deadline = started + timeoutMs;
    const log = createHandlerLog(o.lines(job, index), o.levelFloor);
    const ctx = new RunContext(log, () => call.signal, makeSteps, context, pods && { client: () => pods(delivery.eventId), timeLeftMs: () => deadline - clock(), run: runRequestId(delivery.eventId, h.name, attempt) });
    const event = eventOf(delivery, parsed, attempt);
    let failed: HandlerOutcome = 'failed';
    try {
      const work = scope?.enter ? scope.enter(call, () => invoke(h, event, ctx)) : invoke(h, event, ctx);
      await call.race(work);
      result.ok = true;
    } catch (error) {
      // Steps it started and did not await (Promise.all with one that failed first) are waited
      // for, within the time limit, so each is recorded and none runs again on the retry.
      if (ctx.steps?.unsettled) {
        if (!call.isEnded) await call.race(ctx.steps.settled()).catch(() => {});
        // Ended (its time limit, shutdown, a lost lease): its signal fired, so its steps settle
        // soon; one whose call was answered meanwhile is recorded before the run ends, so its
        // retry does not make the call again. Bounded: a step that ignores the signal is left.
        else await settledWithin(ctx.steps.settled(), STEP_SETTLE_GRACE_MS);
      }
      result.error = describeRunError(error);
      if (error instanceof Error) result.errorName = error.name;
      result.interrupted = call.interrupted;
      if (call.interrupted) failed = 'interrupted';
      else if (error instanceof HandlerTimeoutError) failed = 'timeout';
      // What cannot work on another run (a changed handler, a result that is not JSON, a call the
      // service refuses for good) makes the delivery dead.
      if (isPermanent(error)) result.permanent = true;
      // An empty bucket outside a step: parked until it refills, as a sleep parks.
      const parkUntil = parkRequest(error);
      if (parkUntil !== undefined && !call.interrupted) ctx.parkOutsideSteps(parkUntil);
      if (error instanceof RunParked && !ctx.steps) result.error = 'RunParked: thrown outside a sleep';
    } finally {
      clearTimeout(timer);
      running.delete(call);
      ctx.end();
    }
    const tally = ctx.steps?.tally;
    if (tally) {
      result.steps = { succeeded: tally.succeeded, failed: tally.failed, replayed: tally.replayed };
      if (tally.failedAttempt !== undefined && !result.ok) result.stepAttempt = tally.failedAttempt;
    }
    // Parked at a sleep or an empty bucket (whatever the handler did with the throw): no attempt, due again then.
    const parkedUntil = tally?.parkedUntil ?? ctx.parkedUntil;
    if (parkedUntil !== undefined && !result.interrupted) {
      Object.assign(result, { ok: false, error: null, errorName: undefined, permanent: false, waitUntil: parkedUntil });
      return end('parked');
    }
    return end(result.ok ? 'succeeded' : failed);
  }

  return {
    run,
    abortAll(reason) {
      for (const call of running) call.end(reason, true);
    },
    abortDelivery(eventId, reason) {
      for (const call of running) if (call.eventId === eventId) call.end(reason, true);
    },
  };
}
