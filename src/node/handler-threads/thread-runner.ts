import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { trace } from '@opentelemetry/api';
import type { Clock } from '../../core/clock.js';
import type { HandlerResult } from '../../core/dispatch/handler-result.js';
import type { HandlerCall, HandlerRunner } from '../../core/dispatch/handler-runner.js';
import type { Logger } from '../../core/observability/logger.js';
import { formatTraceParent } from '../../core/tracing/trace-parent.js';
import type { StepJournals } from '../../core/steps/step-journal.js';
import type { PodsClient } from '../../core/pods/pods-client.js';
import { podsErrorData } from './pods-over-port.js';
import type { FromThread, ThreadData, ToThread } from './thread-protocol.js';

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
  logger: Logger;
  clock: Clock;
  /** LOG_LEVEL, so a thread sends no line below it. */
  logLevel: string;
  /** Time limit per handler call, unless the handler sets its own. */
  handlerTimeoutMs: number;
  /** Each thread's old-generation heap limit in MB (HANDLER_THREAD_HEAP_MB): beyond it the thread is ended and replaced. */
  heapMb: number;
  /**
   * How long past a call's time limit its thread may stay silent before it is taken as stuck (a
   * synchronous loop: its own timer could not fire) and replaced.
   */
  stuckAfterMs?: number;
  /** Each handler's own time limit, by name (the receiver's copy of the registry). */
  timeoutOf?: (handler: string) => number | undefined;
  observer?: ThreadPoolObserver;
  /** Where the threads' handler runs keep their durable steps (the store, from this thread). */
  journals?: StepJournals;
  /** The deployment's pod client: the threads' `ctx.pods` calls are made with it, from this thread. */
  pods?: () => Promise<PodsClient>;
  /** STEP_ENCRYPTION_KEY, handed to the threads: sensitive results are sealed there. */
  stepKey?: string | null;
  /**
   * Hides secrets in what comes back from a thread: each result's error, and the text fields of
   * the log lines of its runner and handlers (the thread never sees the stored secrets).
   */
  redact?: (text: string) => string;
}

export interface ThreadRunner extends HandlerRunner {
  /** Starts the threads (the first call starts them too); they load the registry in the background. */
  start(): void;
  /** Resolves once every thread has loaded the registry (or failed to). */
  readonly ready: Promise<void>;
  /** Threads running now. */
  readonly size: number;
  /** Asks each thread to flush and exit, within `graceMs`, then ends the rest. */
  close(graceMs?: number): Promise<void>;
}

interface Pending {
  id: number;
  call: HandlerCall;
  thread: Thread;
  started: number;
  timer: ReturnType<typeof setTimeout>;
  resolve(result: HandlerResult): void;
}

interface Thread {
  worker: Worker;
  pending: Map<number, Pending>;
  ready: Promise<boolean>;
  /** Taking no new calls: replaced once its calls are done. */
  retiring: boolean;
  gone: boolean;
  /** The id of the call whose code the thread runs now (0: none), which it keeps up to date (ThreadData.running). */
  runningNow: Int32Array;
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
  return { registry, entry, tsx, logLevel: options.logLevel, handlerTimeoutMs: options.handlerTimeoutMs, stepKey: options.stepKey ?? null };
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

/**
 * Runs handler calls in a pool of worker threads (BullMQ's sandboxed processors and Piscina's
 * pools are the models): the receiver's thread verifies, stores, answers and schedules; each
 * call's payload is parsed, and its handler runs, in a thread. A thread runs many calls at once
 * (handlers mostly wait on I/O); a call goes to the thread with the fewest. A thread stuck past a
 * call's time limit (a synchronous loop), out of heap, or gone is ended and replaced; the call
 * that did it fails (a time-out, "out of memory in handler NAME"), the others it was running are
 * due again at once without counting as an attempt. Errors handler code leaves behind fail the
 * call they came from, or are logged and counted; they never stop the receiver.
 */
export function createThreadRunner(options: ThreadRunnerOptions): ThreadRunner {
  const { logger, clock, threads: size, heapMb, observer = {}, stuckAfterMs = 1_000, redact = (text: string) => text } = options;
  /** A log line's top-level text fields, redacted (an error's message among them). */
  const redactFields = (fields: Record<string, unknown>) => {
    for (const [k, v] of Object.entries(fields)) {
      if (typeof v === 'string') fields[k] = redact(v);
      else if (v && typeof v === 'object' && typeof (v as { message?: unknown }).message === 'string') fields[k] = { ...v, message: redact((v as { message: string }).message) };
    }
    return fields;
  };
  const data = threadData(options);
  const pool: Thread[] = [];
  let seq = 0;
  let closing = false;

  function spawn(): Thread {
    const running = new SharedArrayBuffer(4);
    const worker = new Worker(BOOTSTRAP, { eval: true, workerData: { ...data, running }, resourceLimits: { maxOldGenerationSizeMb: heapMb }, stdout: false, stderr: false });
    worker.unref();
    let loaded!: (ok: boolean) => void;
    const thread: Thread = { worker, pending: new Map(), ready: new Promise((r) => (loaded = r)), retiring: false, gone: false, runningNow: new Int32Array(running) };
    worker.on('message', (m: FromThread) => {
      switch (m.t) {
        case 'ready':
          unloadableInARow = 0;
          return loaded(true);
        case 'fatal':
          return unloadable(thread, m.error, loaded);
        case 'done':
          return settle(thread.pending.get(m.id), { ...m.result, error: m.result.error === null ? null : redact(m.result.error), interrupted: false });
        case 'log':
          return logger[m.level](redactFields(m.fields), m.msg === undefined ? undefined : redact(m.msg));
        case 'stray':
          return onStray(thread, m);
        case 'steps':
          return void answerSteps(thread, m);
        case 'pods':
          return void answerPods(thread, m);
      }
    });
    worker.on('error', (error: Error & { code?: string }) => {
      if (error.code === 'ERR_WORKER_OUT_OF_MEMORY') return replace(thread, 'out_of_memory');
      logger.error({ err: error.message }, 'a handler thread failed');
      replace(thread, 'exited', `the handler thread failed: ${error.message}`);
    });
    worker.on('exit', (code) => {
      loaded(false);
      if (!thread.gone) replace(thread, 'exited', `the handler thread exited (code ${code})`);
    });
    return thread;
  }

  /**
   * Ends a thread and (unless it was retiring, its successor already started) starts another in
   * its place. Its calls: out of heap or gone, each fails (which one did it is not known); stuck,
   * the stuck call has failed already and the others are due again at once, no attempt counted.
   */
  function replace(thread: Thread, reason: ThreadRestart, why?: string) {
    if (thread.gone) return;
    thread.gone = true;
    void thread.worker.terminate();
    const names = [...thread.pending.values()].map((p) => p.call.handler.name);
    for (const p of [...thread.pending.values()]) {
      const others = [...new Set(names.filter((n) => n !== p.call.handler.name))];
      const also = others.length > 0 ? ` (its thread also ran ${others.join(', ')})` : '';
      if (reason === 'out_of_memory') settle(p, failure(p, 'failed', 'HandlerOutOfMemory', `out of memory in handler ${p.call.handler.name}${also}`));
      else if (reason === 'exited') settle(p, failure(p, 'failed', 'HandlerThreadError', `${why ?? 'the handler thread exited'} while running ${p.call.handler.name}${also}`));
      // Cut short by another call's doing: no attempt, due again now.
      else settle(p, { ...failure(p, 'interrupted', 'HandlerThreadRestarted', `its handler thread was replaced (${reason})`), interrupted: true, waitUntil: clock() });
    }
    const at = pool.indexOf(thread);
    if (at >= 0) pool.splice(at, 1);
    if (closing) return;
    logger.warn({ reason, calls: names.length, handlers: [...new Set(names)] }, 'handler thread replaced');
    observer.restarted?.(reason);
    if (!thread.retiring) pool.push(spawn());
  }

  /** Registry failures in a row in a thread (the receiver's own load of it succeeded). */
  let unloadableInARow = 0;
  /** The registry could not be loaded in a thread: calls fail meanwhile; another thread is tried later, less often each time. */
  function unloadable(thread: Thread, error: string, loaded: (ok: boolean) => void) {
    if (unloadableInARow++ === 0) logger.error({ err: error }, 'a handler thread could not load the handler registry');
    lastFatal = error;
    loaded(false);
    thread.gone = true;
    thread.retiring = true;
    void thread.worker.terminate();
    const at = pool.indexOf(thread);
    if (at >= 0) pool.splice(at, 1);
    if (closing) return;
    setTimeout(() => closing || pool.push(spawn()), Math.min(60_000, 500 * 2 ** Math.min(unloadableInARow, 7))).unref();
  }
  let lastFatal: string | undefined;

  function failure(p: Pending, outcome: HandlerResult['outcome'], errorName: string, error: string): HandlerResult {
    return { handler: p.call.handler.name, attempt: p.call.attempt, ok: false, permanent: false, interrupted: false, error: `${errorName}: ${error}`, errorName, durationMs: clock() - p.started, outcome };
  }

  function settle(p: Pending | undefined, result: Omit<HandlerResult, 'handler' | 'attempt'> & Partial<Pick<HandlerResult, 'handler' | 'attempt'>>) {
    if (!p || !p.thread.pending.delete(p.id)) return; // ended already (time limit, abort): its late answer is dropped
    clearTimeout(p.timer);
    if (p.thread.retiring && p.thread.pending.size === 0) replace(p.thread, 'stray_error');
    p.resolve({ ...result, handler: p.call.handler.name, attempt: p.call.attempt });
  }

  /** Reads or writes a thread's run's steps in the store, and answers it. */
  async function answerSteps(thread: Thread, m: Extract<FromThread, { t: 'steps' }>) {
    const reply = (answer: ToThread) => thread.gone || thread.worker.postMessage(answer);
    if (!options.journals) return reply({ t: 'steps', rid: m.rid, ok: false, error: 'durable steps need a store: this receiver has none' });
    try {
      if (m.op === 'load') reply({ t: 'steps', rid: m.rid, ok: true, records: await options.journals({ eventId: m.eventId, handler: m.handler, claimId: '' }).load() });
      else {
        await options.journals({ eventId: m.step.eventId, handler: m.step.handler, claimId: m.claimId }).save(m.step);
        reply({ t: 'steps', rid: m.rid, ok: true });
      }
    } catch (error) {
      reply({ t: 'steps', rid: m.rid, ok: false, error: redact((error as Error).message) });
    }
  }

  /** Makes a thread's `ctx.pods` call with the deployment's client, and answers it. */
  async function answerPods(thread: Thread, m: Extract<FromThread, { t: 'pods' }>) {
    const reply = (answer: ToThread) => thread.gone || thread.worker.postMessage(answer);
    try {
      if (!options.pods) throw new Error('ctx.pods: this receiver has no pod client');
      const client = await options.pods();
      const value = await (client[m.op] as (...args: unknown[]) => Promise<unknown>)(...m.args);
      reply({ t: 'pods', rid: m.rid, ok: true, value });
    } catch (error) {
      const data = podsErrorData(error);
      reply({ t: 'pods', rid: m.rid, ok: false, error: { ...data, message: redact(data.message) } });
    }
  }

  function onStray(thread: Thread, m: Extract<FromThread, { t: 'stray' }>) {
    observer.stray?.(m.kind, m.handler);
    const fields = { handler: m.handler ?? null, kind: m.kind, err: redact(m.error), run_failed: m.running };
    if (m.handler !== undefined) {
      logger.warn(fields, m.running ? 'handler left an error behind: its run failed' : 'handler left an error behind after its run');
      return;
    }
    // Not from any call's context: the thread's state is not known to be sound. New calls go to a
    // fresh thread; this one is replaced once its calls are done.
    logger.error(fields, 'error in a handler thread outside any handler call: the thread is replaced');
    if (!thread.retiring) {
      thread.retiring = true;
      pool.push(spawn());
      if (thread.pending.size === 0) replace(thread, 'stray_error');
    }
  }

  async function pick(): Promise<Thread | null> {
    for (;;) {
      const live = pool.filter((t) => !t.retiring && !t.gone);
      if (live.length === 0) return null;
      const thread = live.reduce((a, b) => (b.pending.size < a.pending.size ? b : a));
      if (await thread.ready) return thread;
      // That one could not load the registry (and is gone): look again.
      if (closing) return null;
    }
  }

  let started = false;
  function start() {
    if (started || closing) return;
    started = true;
    for (let i = 0; i < Math.max(1, size); i++) pool.push(spawn());
  }

  async function run(call: HandlerCall): Promise<HandlerResult> {
    start();
    const started = clock();
    const thread = await pick();
    if (!thread) {
      const base = { handler: call.handler.name, attempt: call.attempt, ok: false, permanent: false, durationMs: 0 } as const;
      if (closing) return { ...base, interrupted: true, error: 'Error: shutting down', outcome: 'interrupted' };
      return { ...base, interrupted: false, error: `HandlerThreadError: no handler thread could load the registry: ${lastFatal ?? 'unknown'}`, errorName: 'HandlerThreadError', outcome: 'failed' };
    }
    const id = ++seq;
    const timeoutMs = options.timeoutOf?.(call.handler.name) ?? options.handlerTimeoutMs;
    // The handler span of the call (tracing on) continues in the thread: the handler's own spans nest under it.
    const span = trace.getActiveSpan()?.spanContext();
    const traceParent = span ? (formatTraceParent(span) ?? undefined) : undefined;
    const d = call.delivery;
    const message: ToThread = {
      t: 'run', id, handler: call.handler.name, attempt: call.attempt, context: call.context, traceParent, claimId: call.claimId,
      delivery: { eventId: d.eventId, eventType: d.eventType, signatureT: d.signatureT, receivedAt: d.receivedAt, attempts: d.attempts, body: d.body },
    };
    return new Promise<HandlerResult>((resolve) => {
      const p: Pending = {
        id, call, thread, started, resolve,
        // The thread's own timer ends the call at its limit; silence well past it means its loop is stuck.
        timer: setTimeout(() => stuck(p, timeoutMs), timeoutMs + stuckAfterMs),
      };
      thread.pending.set(id, p);
      thread.worker.postMessage(message);
    });
  }

  /**
   * A call's answer is overdue by `stuckAfterMs`: its thread has not come back to its loop. The
   * call whose code the thread runs is the one stuck: when that is another call, this one only
   * waits behind it, and the other's own timer ends it at its own limit (this one is then
   * interrupted, due again). Code of no pending call (a finished call's timer) stuck in a loop:
   * the thread is replaced and its calls are due again. Nothing running known: this call is it.
   */
  function stuck(p: Pending, timeoutMs: number) {
    const culpritId = Atomics.load(p.thread.runningNow, 0);
    if (culpritId !== 0 && culpritId !== p.id) {
      if (p.thread.pending.has(culpritId)) return;
      logger.error({ handler: p.call.handler.name, event_id: p.call.delivery.eventId }, 'code left behind by a finished handler call does not give back its thread: the thread is replaced');
      return replace(p.thread, 'timeout');
    }
    logger.error({ handler: p.call.handler.name, event_id: p.call.delivery.eventId, timeout_ms: timeoutMs }, 'handler did not give back its thread after its time limit: the thread is replaced');
    settle(p, { ...failure(p, 'timeout', 'HandlerTimeoutError', `timed out after ${timeoutMs} ms (the handler did not give back its thread)`) });
    replace(p.thread, 'timeout');
  }

  function abort(eventId: string | undefined, reason: Error) {
    for (const thread of pool) {
      let sent = false;
      for (const p of [...thread.pending.values()]) {
        if (eventId !== undefined && p.call.delivery.eventId !== eventId) continue;
        settle(p, { ...failure(p, 'interrupted', reason.name, reason.message), interrupted: true });
        if (!sent) thread.worker.postMessage({ t: 'abort', eventId, reason: reason.message } satisfies ToThread);
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
      return Promise.all(pool.map((t) => t.ready)).then(() => undefined);
    },
    get size() {
      return pool.length;
    },
    async close(graceMs = 5_000) {
      closing = true;
      const exits = pool.map((t) => new Promise<void>((r) => (t.gone ? r() : t.worker.once('exit', () => r()))));
      for (const t of pool) {
        t.gone = true;
        t.worker.postMessage({ t: 'close' } satisfies ToThread);
      }
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([Promise.all(exits), new Promise((r) => (timer = setTimeout(r, graceMs)))]);
      clearTimeout(timer);
      await Promise.all(pool.map((t) => t.worker.terminate()));
      pool.length = 0;
    },
  };
}
