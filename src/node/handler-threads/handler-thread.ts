// A handler thread: loads the registry once, then runs the jobs the receiver's thread sends with
// the core's one runner (createJobRunner, as HANDLER_THREADS=0 does). This side only carries
// messages: a `run` in, a `done` out with every call's result and log line; an `ask` for a step's
// record or a `ctx.pods` call. Its heap holds each job's payload, events, contexts and lines; its
// CPU, its crashes and its strays cannot reach the loop that answers the sender.
import { parentPort, workerData } from 'node:worker_threads';
import { context, ROOT_CONTEXT, trace } from '@opentelemetry/api';
import type { HandlerDefinition } from '../../core/events/define-handler.js';
import { checkRegistryModule, type RegistryModule } from '../../core/events/registry-module.js';
import { handlerLevelFloor } from '../../core/runner/handler-log.js';
import type { CallWrapper, HandlerCall, HandlerJob } from '../../core/runner/handler-runner.js';
import { createJobRunner } from '../../core/runner/job-runner.js';
import type { RunningCall } from '../../core/runner/running-call.js';
import { createStepSeal, type StepJournals } from '../../core/steps/index.js';
import type { RecordedRun } from '../../core/steps/step-record.js';
import { createPodLocator, type PodLocator } from '../../core/pods/pod-locator.js';
import type { WaitAnswer } from '../../core/waits/waited-event.js';
import { stepSpans } from '../../core/tracing/step-spans.js';
import { parseTraceParent } from '../../core/tracing/trace-parent.js';
import { silentLogger } from '../../core/observability/logger.js';
import { createNodeCallScope } from '../call-scope.js';
import { countWork, enableWorkCounts } from '../../core/observability/work-count.js';
import { startTracing, type RunningTracing } from '../start-tracing.js';
import type { RawServiceAnswer } from '../../core/pods/service-answer.js';
import { errorFrom, podsOverPort } from './pods-over-port.js';
import type { Ask, FromThread, ThreadData, ThreadLine, ThreadResult, ToThread } from './thread-protocol.js';

const data = workerData as ThreadData;
const port = parentPort!;
if (data.workCounts) countThreadWork(data.workCounts);
const post = (message: FromThread) => port.postMessage(message);
const describe = (error: unknown) => (error instanceof Error ? `${error.name}: ${error.message}` : String(error));

/** How often a run still going sends the lines it logged so far. */
const FLUSH_LINES_MS = 1_000;

/** A job in this thread: its lines not sent yet, and its asks waiting for an answer. */
interface Run {
  id: number;
  eventId: string;
  lines: ThreadLine[];
}
/** The runs going, by id, and by event id (a delivery runs at most once at a time here). */
const runs = new Map<number, Run>();
const runOf = new Map<string, Run>();

/**
 * Lines of runs still going leave about once a second, so a long handler's progress shows as it
 * happens: one interval for the thread's life, never a timer per run (a run's lines mostly leave
 * with its `done`).
 */
function flushLines() {
  for (const run of runs.values()) {
    if (run.lines.length === 0) continue;
    post({ t: 'lines', id: run.id, lines: run.lines });
    run.lines = [];
  }
}

/** Asks waiting on the receiver's thread, by request id. */
const asks = new Map<number, { resolve(value: unknown): void; reject(error: Error): void }>();
let askSeq = 0;
function ask(run: Run | undefined, request: Ask, signal?: AbortSignal): Promise<unknown> {
  if (!run) return Promise.reject(new Error('this call has ended'));
  if (signal?.aborted) return Promise.reject(signal.reason);
  const rid = ++askSeq;
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      asks.delete(rid);
      post({ t: 'cancel', rid });
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    asks.set(rid, {
      resolve: (v) => (signal?.removeEventListener('abort', onAbort), resolve(v)),
      reject: (e) => (signal?.removeEventListener('abort', onAbort), reject(e)),
    });
    post({ t: 'ask', rid, run: run.id, ask: request });
  });
}

/** A run's steps, kept by the receiver's thread in the store: each write durable before it answers. */
const threadJournals: StepJournals = ({ eventId, handler, claimId }) => ({
  load: async () => ((await ask(runOf.get(eventId), { op: 'steps.load', eventId, handler })) as RecordedRun | undefined) ?? { steps: [], generation: '' },
  save: async (step) => void (await ask(runOf.get(eventId), { op: 'steps.save', step, claimId })),
  wait: async (wait) => (await ask(runOf.get(eventId), { op: 'steps.wait', wait, claimId })) as WaitAnswer,
});

// Errors handler code leaves behind fail the call they came from (or are told with none), and the thread lives on.
const scope = createNodeCallScope(({ kind, error, call, failedRun }: { kind: 'uncaught_exception' | 'unhandled_rejection'; error: unknown; call?: RunningCall; failedRun: boolean }) => {
  const run = call && runOf.get(call.eventId);
  post({ t: 'stray', kind, error: describe(error), run: run?.id, handler: call?.handler, failedRun });
});
scope.install();

async function start() {
  let tracing: RunningTracing | null = null;
  let handlers: Map<string, HandlerDefinition>;
  let locator: PodLocator;
  let schemas: ReturnType<typeof checkRegistryModule>['payloads']['schemas'];
  try {
    // The same OTEL_* variables as the receiver's: this thread's spans (the handlers' own) go where its spans go.
    tracing = await startTracing(process.env, silentLogger);
    const loaded = checkRegistryModule((await import(data.registry)) as RegistryModule, { registry: data.registry });
    handlers = new Map(loaded.handlers.map((h) => [h.name, h]));
    schemas = loaded.payloads.schemas;
    locator = createPodLocator(loaded.payloads);
  } catch (error) {
    post({ t: 'fatal', error: describe(error) });
    return;
  }
  const runner = createJobRunner({
    clock: Date.now,
    handlerTimeoutMs: data.handlerTimeoutMs,
    schemas,
    levelFloor: handlerLevelFloor(data.logLevel),
    steps: { journals: threadJournals, seal: createStepSeal(data.stepKey), wrapStep: stepSpans(), locator },
    pods: (eventId) => Promise.resolve(podsOverPort((name, args, signal) => ask(runOf.get(eventId), { op: 'pods', name, args }, signal) as Promise<RawServiceAnswer>)),
    lines: (job, index) => {
      const run = runOf.get(job.delivery.eventId);
      return (line) => {
        if (!run || !runs.has(run.id)) return;
        (line as ThreadLine).call = index;
        run.lines.push(line as ThreadLine);
      };
    },
    scope,
  });

  async function run(m: Extract<ToThread, { t: 'run' }>): Promise<void> {
    const r: Run = { id: m.id, eventId: m.eventId, lines: [] };
    runs.set(m.id, r);
    runOf.set(m.eventId, r);
    let traced = false;
    const calls: HandlerCall[] = m.calls.map((c) => {
      const handler = handlers.get(c.handler);
      if (c.traceParent) traced = true;
      return { handler: handler ?? missing(c.handler), attempt: c.attempt, context: c.context };
    });
    // The handler span of each call (tracing on) continues here: the handler's own spans nest under it.
    const wrap: CallWrapper | undefined = traced
      ? (call, _d, go) => {
          const parent = parseTraceParent(m.calls[calls.indexOf(call)]?.traceParent);
          return parent ? context.with(trace.setSpanContext(ROOT_CONTEXT, parent), go) : go();
        }
      : undefined;
    const job: HandlerJob = {
      delivery: { eventId: m.eventId, eventType: m.eventType, signatureT: m.signatureT, receivedAt: m.receivedAt, body: m.body },
      calls,
      claimId: m.claimId,
      wrap,
    };
    try {
      const out = await runner.run(job);
      const results: ThreadResult[] | null = out.results
        ? out.results.map(({ handler: _h, attempt: _a, interrupted: _i, ...rest }) => rest)
        : null;
      post({ t: 'done', id: m.id, results, invalidBody: out.invalidBody, lines: r.lines });
    } catch (error) {
      post({ t: 'done', id: m.id, results: m.calls.map(() => ({ ok: false, permanent: false, error: describe(error), durationMs: 0, outcome: 'failed' })), lines: r.lines });
    } finally {
      runs.delete(m.id);
      if (runOf.get(m.eventId) === r) runOf.delete(m.eventId);
    }
  }

  setInterval(flushLines, FLUSH_LINES_MS).unref();
  port.on('message', (m: ToThread) => {
    if (m.t === 'run') void run(m);
    else if (m.t === 'answer') {
      const waiting = asks.get(m.rid);
      asks.delete(m.rid);
      if (m.ok) waiting?.resolve(m.value);
      else waiting?.reject(errorFrom(m.error));
    } else if (m.t === 'abort') {
      if (m.eventId === undefined) runner.abortAll(new Error(m.reason));
      else runner.abortDelivery(m.eventId, new Error(m.reason));
    } else if (m.t === 'close') {
      void (tracing?.shutdown() ?? Promise.resolve()).finally(() => process.exit(0));
    }
  });
  post({ t: 'ready' });
}

/** A handler the receiver routes to but this thread's registry lacks (they load the same module): each call fails saying so. */
function missing(name: string): HandlerDefinition {
  return {
    pattern: '*',
    name,
    handle: () => {
      throw new Error(`no handler named ${name} in this thread's registry`);
    },
  };
}

void start();

/** The work-count test counts this thread's work too: its counters, and each timer it arms. */
function countThreadWork(buffer: SharedArrayBuffer) {
  enableWorkCounts(buffer);
  const g = globalThis as unknown as Record<'setTimeout' | 'setInterval' | 'setImmediate', (...args: unknown[]) => unknown>;
  for (const name of ['setTimeout', 'setInterval', 'setImmediate'] as const) {
    const original = g[name];
    g[name] = (...args: unknown[]) => {
      countWork(name === 'setImmediate' ? 'immediate' : 'timer');
      return original(...args);
    };
  }
}
