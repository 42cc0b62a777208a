import type { Clock } from '../clock.js';
import { parseSpan } from './time-or-duration.js';
import { stepIdempotencyKey } from './idempotency-key.js';
import type { StepSeal } from './seal.js';
import { describeRunError, parkRequest, RunParked, stepFailed, StepError, stepMismatch } from './step-errors.js';
import type { StepJournal } from './step-journal.js';
import type { RecordedRun, StepRecord } from './step-record.js';
import type { CallScope, StepFrame } from '../runner/call-scope.js';
import { decodeResult, encodeResult } from './step-result.js';
import type { EventType } from '../events/event-types.js';
import { waitedEvent, type WaitedEvent, type WaitedRecord } from '../waits/waited-event.js';
import { linkActiveSpan } from '../tracing/step-spans.js';
import { planWait, type PodPlaces, type WaitForEventOptions, type WaitSource } from './wait-for-event.js';

/** The longest sleep: 30 days. */
export const MAX_SLEEP_MS = 30 * 86_400_000;

/** What a step's function is given. */
export interface StepInfo {
  /** The same in every run of this step (its delivery, handler, position and name): pass it to the other side. */
  idempotencyKey: string;
  /** This step's own try: 1 the first time its function runs, 2 after it threw once, … */
  attempt: number;
}

export interface StepOptions {
  /** Seal the result with STEP_ENCRYPTION_KEY (AES-256-GCM): it is shown nowhere. */
  sensitive?: boolean;
}

/** The durable steps a handler's context offers: `ctx.step`, `ctx.sleep`, `ctx.sleepUntil`. */
export interface HandlerStepApi {
  /**
   * Runs `fn` once per delivery and handler: its JSON result is recorded when it resolves, and
   * every later run gets the recorded result back without calling `fn`. The same name used again
   * in one run (a loop) gets its own place by occurrence.
   */
  step<T>(name: string, fn: (info: StepInfo) => T | Promise<T>, options?: StepOptions): Promise<T>;
  /** Parks the run for `duration` (ms, or `'90s'`, `'2m'`, `'1h'`, `'1d'`; up to 30 days); the code after it runs when it is woken. */
  sleep(name: string, duration: number | string): Promise<void>;
  /** Parks the run until `at` (a Date, epoch ms or ISO text; at most 30 days from now). */
  sleepUntil(name: string, at: Date | number | string): Promise<void>;
  /**
   * Parks the run until podhook receives an event of `type` about the same pod as the running
   * event (or `pod`), received after the running event was; resolves with it, or with null once
   * `timeout` passes (ms, or `'30m'`, up to 30 days). Recorded under `name`: a retry, a replay or
   * a restart gets the same event back; `replay --fresh` waits again.
   */
  waitForEvent<T extends EventType>(name: string, options: WaitForEventOptions<T>): Promise<WaitedEvent<T> | null>;
}

/** What one run did with its steps: for the run's result, metrics and the dead letter. */
export interface StepTally {
  /** Steps whose function ran and was recorded, threw, or whose recorded result was given back. */
  succeeded: number;
  failed: number;
  replayed: number;
  /** The failing step's own try: the retry ladder counts it, not the delivery's attempts. */
  failedAttempt?: number;
  /** The run parked at a sleep: the delivery is due again then. */
  parkedUntil?: number;
}

export interface HandlerStepsOptions {
  eventId: string;
  handler: string;
  journal: StepJournal;
  clock: Clock;
  seal: StepSeal;
  /** Wraps each step's function (a span under the handler's). */
  span?: <T>(name: string, seq: number, fn: () => Promise<T>) => Promise<T>;
  /** Told of each step given back from the record without running (the test kit lists them). */
  replayed?: (name: string, seq: number) => void;
  /** Where a step's function runs as that step (an `AsyncLocalStorage`): nested steps are refused, and `ctx.pods` inside it takes its key. */
  scope?: Pick<CallScope, 'inStep' | 'step'>;
  /** The running event (a wait's pod and its "received after"). */
  event?: WaitSource;
  /** Where each event type carries its pod id (`ctx.waitForEvent`). */
  locator?: PodPlaces;
}


/**
 * One run's durable steps. Made when the handler first asks for one: a handler without steps
 * reads and writes nothing. A step is found again by its name and its occurrence of that name in
 * the run (the second `step('restart')` is the second one recorded under that name), so steps
 * run side by side (`Promise.all`) find their records whatever order they reach them in. In code
 * that runs one step at a time, a recorded step with another name where this one stands stops the
 * run (`step mismatch`: the handler changed under a recorded run), never mixing old results into
 * new steps.
 */
export class HandlerSteps implements HandlerStepApi {
  private records: Promise<RecordedRun> | undefined;
  /** Steps asked for so far, in call order (a position, for the mismatch check). */
  private seq = 0;
  /** Each name's occurrences asked for so far. */
  private readonly named = new Map<string, number>();
  /** The recorded positions this run has found or taken. */
  private readonly taken = new Set<number>();
  /** The steps whose functions run now, each with how many calls to the service it made (their request ids follow its key). */
  private readonly running = new Set<StepFrame>();
  /** The handler returned (or its call ended): a step asked for now is refused. */
  closed = false;
  /** Steps asked for and not settled yet (their record read, their function running, their result being saved). */
  private readonly inflight = new Set<Promise<unknown>>();
  readonly tally: StepTally = { succeeded: 0, failed: 0, replayed: 0 };

  constructor(private readonly o: HandlerStepsOptions) {}

  private load() {
    return (this.records ??= this.o.journal.load());
  }

  /** Refuses a step once the handler returned: nothing records it under the run's claim any more. */
  private open(name: string, kind: StepRecord['kind']) {
    if (this.closed) throw new StepError('step_after_return', `${kind} "${name}" was asked for after the handler returned: await every step before returning`, true);
  }

  /**
   * The step's record (by name and occurrence) and where it is kept, after the checks every step
   * and sleep makes; its idempotency key, which follows its name, occurrence and the run's
   * generation (a fresh run, `replay --fresh` or a backfill, starts a new one).
   */
  private async next(name: string, kind: StepRecord['kind']): Promise<{ seq: number; recorded: StepRecord | undefined; key: string }> {
    this.open(name, kind);
    if (this.tally.parkedUntil !== undefined) throw new RunParked(this.tally.parkedUntil);
    if (typeof name !== 'string' || name === '') throw new StepError('step_failed', `a ${kind} needs a name (a non-empty string)`, true);
    const nested = this.o.scope?.step?.();
    if (nested?.owner === this) {
      throw new StepError('step_nested', `${kind} "${name}" was asked for inside step "${nested.name}": steps do not nest; make it a step of its own, before or after "${nested.name}"`, true);
    }
    const occurrence = (this.named.get(name) ?? 0) + 1;
    this.named.set(name, occurrence);
    const position = ++this.seq;
    // Another step of this run is being asked for or running: positions follow timing then, names do not.
    const alone = this.inflight.size === 0;
    const { steps: records, generation } = await this.load();
    const recorded = records.filter((r) => r.seq > 0 && r.name === name).sort((a, b) => a.seq - b.seq)[occurrence - 1];
    if (recorded && recorded.kind !== kind) throw stepMismatch(recorded, name, kind);
    let seq: number;
    if (recorded) seq = recorded.seq;
    else {
      const there = records.find((r) => r.seq === position);
      if (there && alone && !this.taken.has(position)) throw stepMismatch(there, name, kind);
      seq = there || this.taken.has(position) ? Math.max(position, ...records.map((r) => r.seq), ...this.taken) + 1 : position;
    }
    this.taken.add(seq);
    const key = await stepIdempotencyKey(this.o.eventId, this.o.handler, name, occurrence, generation);
    // A step not awaited: the handler may have returned while its records were read.
    this.open(name, kind);
    return { seq, recorded, key };
  }

  private base(seq: number, name: string, kind: StepRecord['kind'], started: number): StepRecord {
    return {
      eventId: this.o.eventId, handler: this.o.handler, seq, name, kind, state: 'done', attempts: 1, result: null, sensitive: false,
      resultBytes: null, error: null, wakeAt: null, startedAt: started, finishedAt: null, durationMs: null,
    };
  }

  /** Whether a step asked for has not settled yet. */
  get unsettled(): boolean {
    return this.inflight.size > 0;
  }

  /** Resolves once every step asked for so far has settled (recorded, failed or refused). */
  async settled(): Promise<void> {
    while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
  }

  step<T>(name: string, fn: (info: StepInfo) => T | Promise<T>, options: StepOptions = {}): Promise<T> {
    const running = this.runStep(name, fn, options);
    this.inflight.add(running);
    const forget = () => void this.inflight.delete(running);
    running.then(forget, forget);
    return running;
  }

  private async runStep<T>(name: string, fn: (info: StepInfo) => T | Promise<T>, options: StepOptions): Promise<T> {
    const { seq, recorded, key } = await this.next(name, 'step');
    const at = { eventId: this.o.eventId, handler: this.o.handler, seq };
    if (recorded?.state === 'done') {
      this.tally.replayed++;
      this.o.replayed?.(name, seq);
      const text = recorded.sensitive ? await this.o.seal.open(recorded.result!, at) : recorded.result!;
      return decodeResult(text) as T;
    }
    // A sensitive step whose result could not be sealed does not run: its side effect would be lost.
    if (options.sensitive) this.o.seal.check?.();
    const attempt = (recorded?.attempts ?? 0) + 1;
    const info: StepInfo = { idempotencyKey: key, attempt };
    const started = this.o.clock();
    const record = { ...this.base(seq, name, 'step', started), attempts: attempt, sensitive: options.sensitive === true };
    let value: T;
    const running: StepFrame = { owner: this, name, key, calls: 0 };
    this.running.add(running);
    const scope = this.o.scope;
    try {
      // Its function runs as this step: a nested step is refused, and ctx.pods inside it takes its key.
      const call = () => Promise.resolve().then(() => (scope?.inStep ? scope.inStep(running, () => fn(info)) : fn(info)));
      value = await (this.o.span ? this.o.span(name, seq, call) : call());
    } catch (error) {
      if (error instanceof RunParked) throw error;
      // The service's bucket is empty (a 429, or ours): the run parks until it refills, this try not counted.
      const parkUntil = parkRequest(error);
      if (parkUntil !== undefined) {
        this.tally.parkedUntil = parkUntil;
        throw new RunParked(parkUntil);
      }
      const failed = stepFailed(name, seq, attempt, error);
      // Redacted where the row is written (the store's journal), in whichever thread this runs.
      await this.o.journal.save({ ...record, state: 'failed', error: describeRunError(error), finishedAt: this.o.clock(), durationMs: this.o.clock() - started });
      this.tally.failed++;
      this.tally.failedAttempt = Math.max(this.tally.failedAttempt ?? 0, attempt);
      throw failed;
    } finally {
      this.running.delete(running);
    }
    const encoded = encodeResult(name, value);
    const result = record.sensitive ? await this.o.seal.seal(encoded.text, at) : encoded.text;
    await this.o.journal.save({ ...record, state: 'done', result, resultBytes: encoded.bytes, finishedAt: this.o.clock(), durationMs: this.o.clock() - started });
    this.tally.succeeded++;
    // What a later run gets back: the same value, as its recorded JSON reads.
    return decodeResult(encoded.text) as T;
  }

  /**
   * The request id of the next call to the service from the step whose function calls it: its
   * key, then `.2`, `.3`… for its later calls, the same in every run of the step, whatever else
   * runs beside it. Undefined outside a step (and, where no async context tells which step calls,
   * while several run at once).
   */
  nextRequestId(): string | undefined {
    const scope = this.o.scope;
    let c: StepFrame | undefined;
    if (scope?.step) {
      const frame = scope.step();
      c = frame?.owner === this ? frame : undefined;
    } else if (this.running.size === 1) c = this.running.values().next().value!;
    if (!c) return undefined;
    c.calls++;
    return c.calls === 1 ? c.key : `${c.key}.${c.calls}`;
  }

  sleep(name: string, duration: number | string): Promise<void> {
    const ms = parseSpan(duration);
    if (ms === null || ms > MAX_SLEEP_MS) {
      return Promise.reject(new StepError('step_sleep', `sleep "${name}": ${JSON.stringify(duration)} is not a duration up to 30 days (ms, or '90s', '2m', '1h', '1d')`, true));
    }
    return this.park(name, () => this.o.clock() + ms);
  }

  sleepUntil(name: string, at: Date | number | string): Promise<void> {
    const when = at instanceof Date ? at.getTime() : typeof at === 'number' ? at : Date.parse(at);
    if (!Number.isFinite(when) || when > this.o.clock() + MAX_SLEEP_MS) {
      return Promise.reject(new StepError('step_sleep', `sleepUntil "${name}": ${JSON.stringify(at)} is not a time within 30 days`, true));
    }
    return this.park(name, () => when);
  }

  waitForEvent<T extends EventType>(name: string, options: WaitForEventOptions<T>): Promise<WaitedEvent<T> | null> {
    return this.runWait(name, options) as Promise<WaitedEvent<T> | null>;
  }

  private async runWait(name: string, options: WaitForEventOptions): Promise<WaitedEvent | null> {
    this.open(name, 'wait');
    const plan = planWait(name, options, this.o.event, this.o.locator);
    const { seq, recorded } = await this.next(name, 'wait');
    if (recorded?.state === 'done') {
      this.tally.replayed++;
      this.o.replayed?.(name, seq);
      return waitedEvent(decodeResult(recorded.result!) as WaitedRecord | null);
    }
    const journal = this.o.journal;
    if (!journal.wait) throw new StepError('step_wait', `waitForEvent "${name}": this runner keeps no waits (the test kit: pass \`steps\` to runHandler)`, true);
    const now = this.o.clock();
    // The timeout first set stays: a retry or a restart waits until the same time.
    const untilAt = recorded?.wakeAt ?? now + plan.timeoutMs;
    const record = { ...this.base(seq, name, 'wait', recorded?.startedAt ?? now), wakeAt: untilAt };
    const ask = () =>
      journal.wait!({ eventId: this.o.eventId, handler: this.o.handler, seq, name, podId: plan.podId, types: plan.types, afterAt: this.o.event!.receivedAt, untilAt }).then((answer) => {
        // The wait's span (tracing on) links the receipt of the delivery that ended it.
        if ('matched' in answer) linkActiveSpan(answer.traceParent);
        return answer;
      });
    const answer = await (this.o.span ? this.o.span(name, seq, ask) : ask());
    if ('parkUntil' in answer) {
      if (!recorded) await journal.save({ ...record, state: 'sleeping' });
      this.tally.parkedUntil = answer.parkUntil;
      throw new RunParked(answer.parkUntil);
    }
    const value = 'matched' in answer ? answer.matched : null;
    const encoded = encodeResult(name, value);
    const done = this.o.clock();
    await journal.save({ ...record, state: 'done', result: encoded.text, resultBytes: encoded.bytes, finishedAt: done, durationMs: done - record.startedAt });
    this.tally.succeeded++;
    return waitedEvent(value);
  }

  private async park(name: string, wakeAtIfNew: () => number): Promise<void> {
    const { seq, recorded } = await this.next(name, 'sleep');
    if (recorded?.state === 'done') {
      this.tally.replayed++;
      return;
    }
    const now = this.o.clock();
    const wakeAt = recorded?.wakeAt ?? wakeAtIfNew();
    const record = { ...this.base(seq, name, 'sleep', recorded?.startedAt ?? now), wakeAt };
    if (wakeAt <= now) {
      // Woken: the sleep is over, and the code after it runs in this run.
      await this.o.journal.save({ ...record, state: 'done', finishedAt: now, durationMs: now - record.startedAt });
      this.tally.succeeded++;
      return;
    }
    if (!recorded) await this.o.journal.save({ ...record, state: 'sleeping' });
    this.tally.parkedUntil = wakeAt;
    throw new RunParked(wakeAt);
  }
}
