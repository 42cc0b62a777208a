import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { trace } from '@opentelemetry/api';
import type { Clock } from '../../core/clock.js';
import type { HandlerResult } from '../../core/dispatch/handler-result.js';
import type { Logger } from '../../core/observability/logger.js';
import type { Redact } from '../../core/observability/redact-secrets.js';
import type { AnsweringPodsClient, PodsCallOptions } from '../../core/pods/pods-client.js';
import type { PodsCallName, PodsCalls } from '../../core/pods/pods-operations.js';
import { callBindings, type CallBindings, type LineWriter } from '../../core/runner/handler-lines.js';
import type { HandlerJob, HandlerRunner, JobResult } from '../../core/runner/handler-runner.js';
import type { StepJournals } from '../../core/steps/step-journal.js';
import { formatTraceParent } from '../../core/tracing/trace-parent.js';
import { countWork, workCountsBuffer } from '../../core/observability/work-count.js';
import { askError } from './pods-over-port.js';
import { readStuckCall } from './stuck-call.js';
import { threadEnv } from './thread-env.js';
import type { Ask, FromThread, ThreadData, ThreadLine, ToThread } from './thread-protocol.js';

/** Why a handler thread was replaced. */
export type ThreadRestart = 'timeout' | 'out_of_memory' | 'exited' | 'stray_error';

/** What the pool tells its watchers (Node's metrics). */
export interface ThreadPoolObserver {
  /** An exception or rejection handler code left behind; `handler` when the call it came from is known. */
  stray?(kind: 'uncaught_exception' | 'unhandled_rejection', handler: string | undefined): void;
  /** A thread was ended and another started in its place. */
  restarted?(reason: ThreadRestart): void;
}

export interface ThreadRunnerOptions {
  /** The registry module the threads load (its handlers must be the ones the receiver routes to). */
  registry: URL;
  /** Threads in the pool (HANDLER_THREADS, at least 1). */
  threads: number;
  /** The pool's own lines (a thread replaced, a stray error). */
  logger: Logger;
  /** Writes the handlers' lines that come back from the threads (the receiver's writer: redacted). */
  lines: LineWriter;
  /** Hides secrets in what a thread sends as text (a stray error; an ask's failure). */
  redact: Redact;
  clock: Clock;
  /** LOG_LEVEL, so a thread makes no line below it. */
  logLevel: string;
  /** Time limit per handler call, unless the handler sets its own. */
  handlerTimeoutMs: number;
  /** Each thread's old-generation heap limit in MB (HANDLER_THREAD_HEAP_MB): beyond it the thread is ended and replaced. */
  heapMb: number;
  /**
   * How long past a run's time limit its thread may stay silent before it is taken as stuck (a
   * synchronous loop: its own timer could not fire) and replaced.
   */
  stuckAfterMs?: number;
  /** Each handler's own time limit, by name (the receiver's copy of the registry). */
  timeoutOf?: (handler: string) => number | undefined;
  observer?: ThreadPoolObserver;
  /** Where the threads' handler runs keep their durable steps (the store, from this thread; errors redacted there). */
  journals?: StepJournals;
  /** The deployment's pod client: the threads' `ctx.pods` calls are made with it, from this thread. */
  pods?: () => Promise<AnsweringPodsClient>;
  /** STEP_ENCRYPTION_KEY, handed to the threads: sensitive results are sealed there. */
  stepKey?: string | null;
  /** The threads' environment (default: this process's without the receiver's secrets, `threadEnv`). */
  env?: Record<string, string>;
}

export interface ThreadRunner extends HandlerRunner {
  /** Starts the threads (the first run starts them too); they load the registry in the background. */
  start(): void;
  /** Resolves once every thread has loaded the registry; rejects with the error of one that could not. */
  readonly ready: Promise<void>;
  /** 'ok', or why no handler can run now (no thread could load the registry): readiness reports it. */
  health(): 'ok' | string;
  /** Threads running now. */
  readonly size: number;
  /** Asks each thread to flush and exit, within `graceMs`, then ends the rest. */
  close(graceMs?: number): Promise<void>;
}

/** One run sent to a thread: part of a job (the calls at `sent`), its calls' results as they come. */
interface Pending {
  id: number;
  job: HandlerJob;
  thread: Thread;
  /** The job's call indexes this message carries, in the order the thread sees them. */
  sent: number[];
  started: number;
  /** When its thread is overdue: the run's longest time limit past its start, plus `stuckAfterMs`. */
  stuckAt: number;
  /** Gives each call's result (by job index) to the job; a call settled once stays settled. */
  settle(index: number, result: HandlerResult): void;
  settled(index: number): boolean;
  invalidBody?: string;
  /** The signal of this run's asks (a `ctx.pods` call waiting for a token, its request): aborted when the run ends. */
  asks?: AbortController;
  /** How many times calls of this job were sent again after their thread got stuck. */
  resends: number;
  bindings: (CallBindings | undefined)[];
}

interface Thread {
  worker: Worker;
  pending: Map<number, Pending>;
  ready: Promise<boolean>;
  /** Taking no new runs: replaced once its runs are done. */
  retiring: boolean;
  gone: boolean;
  /**
   * Runs ended on this side (a lost lease) that the thread has not answered yet, by id, with their
   * `stuckAt`: a thread that loops in an ended run's code is still watched, and replaced.
   */
  ended: Map<number, number>;
  /** The watchdog: one timer, for the earliest `stuckAt` of its runs (ended ones too). */
  watch?: { at: number; timer: ReturnType<typeof setTimeout> };
}

const HERE = import.meta.url;
const FROM_SOURCE = HERE.endsWith('.ts');

/** Where a thread starts: this folder's handler-thread module, through tsx when running from TypeScript sources. */
function threadData(options: ThreadRunnerOptions): ThreadData {
  const registry = options.registry.href;
  const entry = new URL(`./handler-thread.${FROM_SOURCE ? 'ts' : 'js'}`, HERE).href;
  const needsTsx = FROM_SOURCE || /\.tsx?$/.test(options.registry.pathname);
  let tsx: ThreadData['tsx'];
  if (needsTsx) {
    // The ESM build of tsx's API (its CommonJS one resolves a sibling path that is not there).
    const api = createRequire(HERE).resolve('tsx/esm/api').replace(/\.cjs$/, '.mjs');
    tsx = { api: new URL(`file://${api}`).href, tsconfig: new URL('../../../tsconfig.json', HERE).pathname };
  }
  return { registry, entry, tsx, logLevel: options.logLevel, handlerTimeoutMs: options.handlerTimeoutMs, stepKey: options.stepKey ?? null, workCounts: workCountsBuffer() };
}

/**
 * A thread's first script: registers tsx where the sources are TypeScript (a thread does not
 * inherit the loader the process registered in code, as bin/podhook.js does), then loads the entry.
 */
const BOOTSTRAP = `
const { workerData } = require('node:worker_threads');
(async () => {
  if (workerData.tsx) (await import(workerData.tsx.api)).register({ tsconfig: workerData.tsx.tsconfig });
  await import(workerData.entry);
})().catch((error) => require('node:worker_threads').parentPort.postMessage({ t: 'fatal', error: String(error && error.stack || error) }));
`;

/** A run is sent again on a fresh thread at most this often (its thread got stuck on another call's loop). */
const MAX_RESENDS = 2;

/**
 * Runs handler jobs in a pool of worker threads (BullMQ's sandboxed processors and Piscina's pools
 * are the models): the receiver's thread verifies, stores, answers and schedules; a thread runs
 * the core's runner. One message each way per delivery: `run` (the body a transferred buffer)
 * and `done` (every result and line). A thread runs many jobs at once (handlers mostly wait on
 * I/O); a job goes to the thread with the fewest calls. A thread silent past a run's time limit
 * (a synchronous loop) is read through the inspector to name the looping call, which fails as a
 * time-out; the thread is replaced and the other calls it held are sent again to its successor,
 * in the same attempt. A thread out of heap, or gone, is replaced and its calls fail. Errors
 * handler code leaves behind fail the call they came from, or are logged and counted.
 */
export function createThreadRunner(options: ThreadRunnerOptions): ThreadRunner {
  const { logger, clock, threads: size, heapMb, observer = {}, stuckAfterMs = 1_000, redact } = options;
  const data = threadData(options);
  const env = options.env ?? threadEnv();
  const pool: Thread[] = [];
  let seq = 0;
  let closing = false;
  let fatal: string | undefined;
  /** A thread has loaded the registry: handlers can run. */
  let loadedOnce = false;

  function spawn(): Thread {
    const worker = new Worker(BOOTSTRAP, { eval: true, workerData: data, env, resourceLimits: { maxOldGenerationSizeMb: heapMb }, stdout: false, stderr: false });
    worker.unref();
    let loaded!: (ok: boolean) => void;
    const thread: Thread = { worker, pending: new Map(), ended: new Map(), ready: new Promise((r) => (loaded = r)), retiring: false, gone: false };
    worker.on('message', (m: FromThread) => {
      countWork('message_from_thread');
      switch (m.t) {
        case 'ready':
          unloadableInARow = 0;
          fatal = undefined;
          loadedOnce = true;
          return loaded(true);
        case 'fatal':
          return unloadable(thread, m.error, loaded);
        case 'done':
          return done(thread, m);
        case 'lines':
          return writeLines(thread.pending.get(m.id), m.lines);
        case 'ask':
          return void answer(thread, m.rid, thread.pending.get(m.run), m.ask);
        case 'cancel':
          asksInFlight.get(m.rid)?.abort(new Error('the call that asked has ended'));
          return;
        case 'stray':
          return onStray(thread, m);
      }
    });
    worker.on('error', (error: Error & { code?: string }) => {
      if (error.code === 'ERR_WORKER_OUT_OF_MEMORY') return replace(thread, 'out_of_memory');
      logger.error({ err: redact(error.message) }, 'a handler thread failed');
      replace(thread, 'exited', `the handler thread failed: ${redact(error.message)}`);
    });
    worker.on('exit', (code) => {
      loaded(false);
      if (!thread.gone) replace(thread, 'exited', `the handler thread exited (code ${code})`);
    });
    return thread;
  }

  function post(thread: Thread, message: ToThread, transfer?: ArrayBuffer[]) {
    countWork('message_to_thread');
    thread.worker.postMessage(message, transfer);
  }

  function writeLines(p: Pending | undefined, lines: ThreadLine[]) {
    if (!p) return;
    for (const line of lines) {
      const index = p.sent[line.call];
      if (index === undefined) continue;
      const call = p.job.calls[index]!;
      options.lines((p.bindings[index] ??= callBindings(p.job.delivery, call.handler.name, call.attempt)), line);
    }
  }

  function done(thread: Thread, m: Extract<FromThread, { t: 'done' }>) {
    const p = thread.pending.get(m.id);
    if (!p) return void thread.ended.delete(m.id); // ended already (a time limit on this side, an abort): its late answer is dropped
    thread.pending.delete(m.id);
    p.asks?.abort(new Error('the run has ended'));
    writeLines(p, m.lines);
    if (m.results === null) {
      p.invalidBody = m.invalidBody ?? 'invalid body';
      for (const index of p.sent) p.settle(index, failure(p, index, 'invalid_payload', 'InvalidBody', p.invalidBody));
    } else {
      m.results.forEach((r, j) => {
        const index = p.sent[j]!;
        const call = p.job.calls[index]!;
        p.settle(index, { ...r, handler: call.handler.name, attempt: call.attempt, interrupted: false });
      });
    }
    if (thread.retiring && thread.pending.size === 0) replace(thread, 'stray_error');
  }

  /** Does what a thread's call asks, with this thread's store and pod client, and answers. */
  const asksInFlight = new Map<number, AbortController>();
  async function answer(thread: Thread, rid: number, p: Pending | undefined, ask: Ask) {
    const reply = (message: ToThread, transfer?: ArrayBuffer[]) => thread.gone || post(thread, message, transfer);
    const controller = new AbortController();
    asksInFlight.set(rid, controller);
    try {
      if (!p) throw new Error('this run has ended');
      const signal = AbortSignal.any([(p.asks ??= new AbortController()).signal, controller.signal]);
      let value: unknown;
      if (ask.op === 'steps.load' || ask.op === 'steps.save' || ask.op === 'steps.wait') {
        if (!options.journals) throw new Error('durable steps need a store: this receiver has none');
        if (ask.op === 'steps.load') value = await options.journals({ eventId: ask.eventId, handler: ask.handler, claimId: p.job.claimId }).load();
        else if (ask.op === 'steps.save') await options.journals({ eventId: ask.step.eventId, handler: ask.step.handler, claimId: ask.claimId }).save(ask.step);
        else {
          const journal = options.journals({ eventId: ask.wait.eventId, handler: ask.wait.handler, claimId: ask.claimId });
          if (!journal.wait) throw new Error('ctx.waitForEvent: this receiver keeps no waits');
          value = await journal.wait(ask.wait);
        }
      } else {
        if (!options.pods) throw new Error('ctx.pods: this receiver has no pod client');
        const [args, callOptions] = ask.args as [PodsCalls[PodsCallName]['args'], PodsCallOptions];
        const raw = await (await options.pods()).answer(ask.name as PodsCallName, args, { ...callOptions, signal });
        // The answer's bytes fill their own buffer (the client reads them so): moved to the thread, not copied.
        const whole = raw.bytes.byteOffset === 0 && raw.bytes.byteLength === raw.bytes.buffer.byteLength && raw.bytes.buffer instanceof ArrayBuffer;
        return reply({ t: 'answer', rid, ok: true, value: raw }, whole ? [raw.bytes.buffer as ArrayBuffer] : undefined);
      }
      reply({ t: 'answer', rid, ok: true, value });
    } catch (error) {
      const e = askError(error);
      reply({ t: 'answer', rid, ok: false, error: { ...e, message: redact(e.message) } });
    } finally {
      asksInFlight.delete(rid);
    }
  }

  function onStray(thread: Thread, m: Extract<FromThread, { t: 'stray' }>) {
    observer.stray?.(m.kind, m.handler);
    const fields = { handler: m.handler ?? null, kind: m.kind, err: redact(m.error), run_failed: m.failedRun };
    if (m.handler !== undefined) {
      logger.warn(fields, m.failedRun ? 'handler left an error behind: its run failed' : 'handler left an error behind after its run');
      return;
    }
    // Not from any call's context: the thread's state is not known to be sound. New runs go to a
    // fresh thread; this one is replaced once its runs are done.
    logger.error(fields, 'error in a handler thread outside any handler call: the thread is replaced');
    if (!thread.retiring) {
      thread.retiring = true;
      pool.push(spawn());
      if (thread.pending.size === 0) replace(thread, 'stray_error');
    }
  }

  function failure(p: Pending, index: number, outcome: HandlerResult['outcome'], errorName: string, error: string): HandlerResult {
    const call = p.job.calls[index]!;
    return { handler: call.handler.name, attempt: call.attempt, ok: false, permanent: outcome === 'invalid_payload', interrupted: outcome === 'interrupted', error: `${errorName}: ${error}`, errorName, durationMs: clock() - p.started, outcome };
  }

  /** The calls of a thread's runs not settled yet, each with its run. */
  function unsettled(thread: Thread): Array<{ p: Pending; index: number }> {
    return [...thread.pending.values()].flatMap((p) => p.sent.filter((i) => !p.settled(i)).map((index) => ({ p, index })));
  }

  /**
   * Ends a thread and (unless it was retiring, its successor already started) starts another in
   * its place. Its calls: out of heap or gone, each fails (which one did it is not known); stuck,
   * the looping call has failed already and the others are sent again to a fresh thread.
   */
  function replace(thread: Thread, reason: ThreadRestart, why?: string) {
    if (thread.gone) return;
    thread.gone = true;
    if (thread.watch) clearTimeout(thread.watch.timer);
    void thread.worker.terminate();
    const left = unsettled(thread);
    const names = left.map(({ p, index }) => p.job.calls[index]!.handler.name);
    const runs = [...thread.pending.values()];
    thread.pending.clear();
    const at = pool.indexOf(thread);
    if (at >= 0) pool.splice(at, 1);
    if (!closing) {
      logger.warn({ reason, calls: names.length, handlers: [...new Set(names)] }, 'handler thread replaced');
      observer.restarted?.(reason);
      if (!thread.retiring) pool.push(spawn());
    }
    for (const { p, index } of left) {
      const name = p.job.calls[index]!.handler.name;
      const others = [...new Set(names.filter((n) => n !== name))];
      const also = others.length > 0 ? ` (its thread also ran ${others.join(', ')})` : '';
      if (reason === 'out_of_memory') p.settle(index, failure(p, index, 'failed', 'HandlerOutOfMemory', `out of memory in handler ${name}${also}`));
      else if (reason === 'exited') p.settle(index, failure(p, index, 'failed', 'HandlerThreadError', `${why ?? 'the handler thread exited'} while running ${name}${also}`));
    }
    for (const p of runs) p.asks?.abort(new Error('its handler thread was replaced'));
    if (reason !== 'timeout' && reason !== 'stray_error') return;
    // Cut short by another call's doing: sent again, in the same attempt, to a thread that is not stuck.
    for (const p of runs) {
      const again = p.sent.filter((i) => !p.settled(i));
      if (again.length === 0) continue;
      if (closing || p.resends >= MAX_RESENDS) {
        for (const index of again) p.settle(index, { ...failure(p, index, 'interrupted', 'HandlerThreadRestarted', `its handler thread was replaced (${reason})`), waitUntil: clock() });
        continue;
      }
      void resend(p, again);
    }
  }

  async function resend(p: Pending, indexes: number[]) {
    const thread = await pick();
    if (!thread) {
      for (const index of indexes) p.settle(index, { ...failure(p, index, 'interrupted', 'HandlerThreadRestarted', 'no handler thread to run it again'), waitUntil: clock() });
      return;
    }
    send({ ...p, id: ++seq, thread, sent: indexes, started: clock(), resends: p.resends + 1, asks: undefined }, undefined);
  }

  /** Registry failures in a row in a thread (the receiver's own load of it succeeded). */
  let unloadableInARow = 0;
  /** The registry could not be loaded in a thread: runs fail meanwhile; another thread is tried later, less often each time. */
  function unloadable(thread: Thread, error: string, loaded: (ok: boolean) => void) {
    if (unloadableInARow++ === 0) logger.error({ err: redact(error) }, 'a handler thread could not load the handler registry');
    fatal = error;
    loaded(false);
    thread.gone = true;
    thread.retiring = true;
    void thread.worker.terminate();
    const at = pool.indexOf(thread);
    if (at >= 0) pool.splice(at, 1);
    if (closing) return;
    setTimeout(() => closing || pool.push(spawn()), Math.min(60_000, 500 * 2 ** Math.min(unloadableInARow, 7))).unref();
  }

  async function pick(): Promise<Thread | null> {
    for (;;) {
      const live = pool.filter((t) => !t.retiring && !t.gone);
      if (live.length === 0) return null;
      let thread = live[0]!;
      let least = Infinity;
      for (const t of live) {
        let calls = 0;
        for (const p of t.pending.values()) calls += p.sent.length;
        if (calls < least) (least = calls), (thread = t);
      }
      if (await thread.ready) return thread;
      // That one could not load the registry (and is gone): look again.
      if (closing) return null;
    }
  }

  /** Arms the thread's watchdog for `at`, unless it is armed for earlier already. */
  function watch(thread: Thread, at: number) {
    if (thread.watch && thread.watch.at <= at) return;
    if (thread.watch) clearTimeout(thread.watch.timer);
    const timer = setTimeout(() => {
      thread.watch = undefined;
      const now = clock();
      let next = Infinity;
      let overdue = false;
      for (const stuckAt of [...[...thread.pending.values()].map((p) => p.stuckAt), ...thread.ended.values()]) {
        if (stuckAt <= now) overdue = true;
        else next = Math.min(next, stuckAt);
      }
      if (overdue) void stuck(thread);
      else if (next !== Infinity) watch(thread, next);
    }, Math.max(0, at - clock()));
    timer.unref();
    thread.watch = { at, timer };
  }

  /**
   * A run's answer is overdue: the thread has not come back to its loop. The call whose code the
   * thread runs is named through the inspector and fails as a time-out; the thread is replaced,
   * and the other calls it held go to its successor. Code of no call (a finished call's timer)
   * stuck in a loop: nobody is blamed. The thread could not be read: the overdue call is taken as it.
   */
  async function stuck(thread: Thread) {
    if (thread.gone || thread.retiring) return;
    thread.retiring = true;
    const culprit = await readStuckCall(thread.worker);
    if (thread.gone) return;
    let blamed: { p: Pending; index: number } | undefined;
    if (culprit) {
      for (const p of thread.pending.values()) {
        if (p.job.delivery.eventId !== culprit.eventId) continue;
        const index = p.sent[culprit.index];
        if (index !== undefined && !p.settled(index)) blamed = { p, index };
      }
    } else if (culprit === undefined) {
      const now = clock();
      for (const p of thread.pending.values()) {
        if (p.stuckAt > now) continue;
        const index = p.sent.find((i) => !p.settled(i));
        if (index !== undefined) blamed ??= { p, index };
      }
    }
    if (blamed) {
      const { p, index } = blamed;
      const call = p.job.calls[index]!;
      const timeoutMs = options.timeoutOf?.(call.handler.name) ?? options.handlerTimeoutMs;
      logger.error({ handler: call.handler.name, event_id: p.job.delivery.eventId, timeout_ms: timeoutMs }, 'handler did not give back its thread after its time limit: the thread is replaced');
      p.settle(index, failure(p, index, 'timeout', 'HandlerTimeoutError', `timed out after ${timeoutMs} ms (the handler did not give back its thread)`));
    } else {
      logger.error({ calls: unsettled(thread).length }, 'code left behind by a finished handler call does not give back its thread: the thread is replaced');
    }
    thread.retiring = false;
    replace(thread, 'timeout');
  }

  let started = false;
  function start() {
    if (started || closing) return;
    started = true;
    for (let i = 0; i < Math.max(1, size); i++) pool.push(spawn());
  }

  /** Posts the calls at `p.sent` to `p.thread`; `traceParents` by job index. */
  function send(p: Pending, traceParents: (string | undefined)[] | undefined) {
    const { job } = p;
    const d = job.delivery;
    let longest = 0;
    const calls = p.sent.map((index) => {
      const c = job.calls[index]!;
      longest = Math.max(longest, options.timeoutOf?.(c.handler.name) ?? options.handlerTimeoutMs);
      const tp = traceParents?.[index];
      return { handler: c.handler.name, attempt: c.attempt, ...(c.context && { context: c.context }), ...(tp && { traceParent: tp }) };
    });
    p.stuckAt = p.started + longest + stuckAfterMs;
    p.thread.pending.set(p.id, p);
    // A copy of the body in a buffer of its own, transferred (not cloned): the receiver keeps its
    // bytes for a run sent again after a stuck thread.
    const body = new Uint8Array(d.body);
    const message: ToThread = { t: 'run', id: p.id, eventId: d.eventId, eventType: d.eventType, signatureT: d.signatureT, receivedAt: d.receivedAt, body, calls, claimId: job.claimId };
    post(p.thread, message, [body.buffer]);
    watch(p.thread, p.stuckAt);
  }

  async function run(job: HandlerJob): Promise<JobResult> {
    start();
    const n = job.calls.length;
    const results: (HandlerResult | undefined)[] = new Array(n);
    const waiting: ((r: HandlerResult) => void)[] = [];
    const promises = job.calls.map((_, i) => new Promise<HandlerResult>((resolve) => (waiting[i] = resolve)));
    // The instruments' wrapper sees each call start (its span) and end; its trace context goes with the call.
    let traceParents: (string | undefined)[] | undefined;
    const wrapped = job.wrap
      ? job.calls.map((call, i) =>
          job.wrap!(call, job.delivery, () => {
            const span = trace.getActiveSpan()?.spanContext();
            (traceParents ??= [])[i] = span ? (formatTraceParent(span) ?? undefined) : undefined;
            return promises[i]!;
          }),
        )
      : promises;
    const thread = await pick();
    if (!thread) {
      for (let i = 0; i < n; i++) {
        const base = { handler: job.calls[i]!.handler.name, attempt: job.calls[i]!.attempt, ok: false, permanent: false, durationMs: 0 } as const;
        waiting[i]!(
          closing
            ? { ...base, interrupted: true, error: 'Error: shutting down', outcome: 'interrupted' }
            : { ...base, interrupted: false, error: `HandlerThreadError: no handler thread could load the registry: ${fatal ?? 'unknown'}`, errorName: 'HandlerThreadError', outcome: 'failed' },
        );
      }
      return { results: await Promise.all(wrapped) };
    }
    const p: Pending = {
      id: ++seq, job, thread, sent: job.calls.map((_, i) => i), started: clock(), stuckAt: 0, resends: 0, bindings: [],
      settle(index, result) {
        if (results[index] !== undefined) return;
        results[index] = result;
        waiting[index]!(result);
      },
      settled: (index) => results[index] !== undefined,
    };
    send(p, traceParents);
    const all = await Promise.all(wrapped);
    return p.invalidBody !== undefined ? { invalidBody: p.invalidBody } : { results: all };
  }

  function abort(eventId: string | undefined, reason: Error) {
    for (const thread of pool) {
      let sent = false;
      for (const p of [...thread.pending.values()]) {
        if (eventId !== undefined && p.job.delivery.eventId !== eventId) continue;
        thread.pending.delete(p.id);
        // Watched until the thread answers it: its code may be the loop that keeps the thread.
        thread.ended.set(p.id, p.stuckAt);
        p.asks?.abort(reason);
        for (const index of p.sent) p.settle(index, { ...failure(p, index, 'interrupted', reason.name, reason.message), error: `${reason.name}: ${reason.message}` });
        if (!sent) post(thread, { t: 'abort', eventId, reason: reason.message });
        sent = true;
      }
    }
  }

  return {
    readsBody: true,
    start,
    run,
    abortAll: (reason) => abort(undefined, reason),
    abortDelivery: (eventId, reason) => abort(eventId, reason),
    get ready() {
      return Promise.all(pool.map((t) => t.ready)).then((loaded) => {
        if (loaded.some((ok) => !ok) && fatal !== undefined) throw new Error(`a handler thread could not load the handler registry: ${redact(fatal)}`);
      });
    },
    health: () => {
      if (fatal !== undefined && !pool.some((t) => !t.gone && !t.retiring)) return `no handler thread could load the registry: ${redact(fatal)}`;
      return loadedOnce ? 'ok' : 'the handler threads are loading the registry';
    },
    get size() {
      return pool.length;
    },
    async close(graceMs = 5_000) {
      closing = true;
      const exits = pool.map((t) => new Promise<void>((r) => (t.gone ? r() : t.worker.once('exit', () => r()))));
      for (const t of pool) {
        t.gone = true;
        if (t.watch) clearTimeout(t.watch.timer);
        post(t, { t: 'close' });
      }
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([Promise.all(exits), new Promise((r) => (timer = setTimeout(r, graceMs)))]);
      clearTimeout(timer);
      await Promise.all(pool.map((t) => t.worker.terminate()));
      pool.length = 0;
    },
  };
}
