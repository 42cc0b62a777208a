// A handler thread: loads the registry once, then runs the handler calls the receiver's thread
// sends, with the core's own runner (schema, time limit, signal, `handler run` line). Its heap
// holds each call's payload, event, context and logger; its CPU, its crashes and its strays
// cannot reach the loop that answers the sender. Started by thread-runner.ts.
import { AsyncLocalStorage, createHook } from 'node:async_hooks';
import { parentPort, workerData } from 'node:worker_threads';
import { context, ROOT_CONTEXT, trace } from '@opentelemetry/api';
import type { Delivery } from '../../core/delivery.js';
import { InvalidBodyError, lazyPayload } from '../../core/dispatch/parse-delivery-body.js';
import { createHandlerRunner } from '../../core/dispatch/run-handler.js';
import { createStepSeal, type StepJournals } from '../../core/steps/index.js';
import type { StepRecord } from '../../core/steps/step-record.js';
import { stepSpans } from '../../core/tracing/step-spans.js';
import { typedPayloads } from '../../core/dispatch/typed-payload.js';
import type { HandlerDefinition } from '../../core/events/define-handler.js';
import { checkRegistryModule, type RegistryModule } from '../../core/events/registry-module.js';
import type { Logger } from '../../core/observability/logger.js';
import { parseTraceParent } from '../../core/tracing/trace-parent.js';
import { startTracing, type RunningTracing } from '../start-tracing.js';
import type { FromThread, PodsOperationName, ThreadData, ThreadResult, ToThread } from './thread-protocol.js';
import { podsErrorFrom, podsOverPort } from './pods-over-port.js';

const data = workerData as ThreadData;
const port = parentPort!;
const post = (message: FromThread) => port.postMessage(message);

const LEVELS = ['debug', 'info', 'warn', 'error'] as const;
type Level = (typeof LEVELS)[number];

/** A logger whose lines are sent to the receiver's thread, which writes them with its own (redaction, format, destination). */
function forwardingLogger(bindings: Record<string, unknown>, min: number): Logger {
  const line = (level: Level) => (obj: object, msg?: string) => {
    if (LEVELS.indexOf(level) < min) return;
    post({ t: 'log', level, fields: { ...bindings, ...toCloneable(obj) }, msg });
  };
  return { debug: line('debug'), info: line('info'), warn: line('warn'), error: line('error'), child: (more) => forwardingLogger({ ...bindings, ...more }, min) };
}

/** What a structured clone cannot take (functions, class instances with methods) is sent as text. */
function toCloneable(obj: object): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(obj)) out[k] = typeof v === 'function' || typeof v === 'symbol' ? String(v) : v instanceof Error ? { type: v.name, message: v.message, stack: v.stack } : v;
  return out;
}

const describe = (error: unknown) => (error instanceof Error ? `${error.name}: ${error.message}` : String(error));

/** The call whose code is running (its async context follows its timers and promises). */
const calls = new AsyncLocalStorage<{ id: number; handler: string }>();
/**
 * Which call's code runs now, in memory the receiver's thread reads when this thread stops
 * answering: every callback and promise continuation sets it from its async context on entry.
 */
const runningNow = new Int32Array(data.running ?? new SharedArrayBuffer(4));
createHook({
  before() {
    runningNow[0] = calls.getStore()?.id ?? 0;
  },
  after() {
    runningNow[0] = 0;
  },
}).enable();
/** Each call still running (its answer not sent), and how a stray error of its own fails it. */
const failing = new Map<number, { fail(error: unknown): void; error?: unknown }>();

function stray(kind: 'uncaught_exception' | 'unhandled_rejection', error: unknown) {
  const call = calls.getStore();
  const running = call && failing.get(call.id);
  if (running && running.error === undefined) {
    running.error = error;
    running.fail(error);
  }
  post({ t: 'stray', kind, error: describe(error), id: call?.id, handler: call?.handler, running: running !== undefined });
}
// Handled here, the thread lives on: an error its handlers left behind is theirs, not the thread's.
process.on('uncaughtException', (error) => stray('uncaught_exception', error));
process.on('unhandledRejection', (reason) => stray('unhandled_rejection', reason));

/** Step reads and writes waiting on the receiver's thread, by request id. */
const stepRequests = new Map<number, { resolve(records?: StepRecord[]): void; reject(error: Error): void }>();
let stepRequestSeq = 0;
function askSteps(request: { op: 'load'; eventId: string; handler: string } | { op: 'save'; step: StepRecord; claimId: string }): Promise<StepRecord[] | undefined> {
  const rid = ++stepRequestSeq;
  return new Promise((resolve, reject) => {
    stepRequests.set(rid, { resolve, reject });
    post({ t: 'steps', rid, ...request });
  });
}

/** `ctx.pods` calls waiting on the receiver's thread, by request id. */
const podsRequests = new Map<number, { resolve(value: unknown): void; reject(error: Error): void }>();
const podsClient = podsOverPort((op: PodsOperationName, args: unknown[]) => {
  const rid = ++stepRequestSeq;
  return new Promise((resolve, reject) => {
    podsRequests.set(rid, { resolve, reject });
    post({ t: 'pods', rid, op, args });
  });
});

/** A run's steps, kept by the receiver's thread in the store: each write durable before it answers. */
const threadJournals: StepJournals = ({ eventId, handler, claimId }) => ({
  load: async () => (await askSteps({ op: 'load', eventId, handler })) ?? [],
  save: async (step) => void (await askSteps({ op: 'save', step, claimId })),
});

async function start() {
  const min = Math.max(0, LEVELS.indexOf(data.logLevel as Level));
  const logger = forwardingLogger({}, min);
  let tracing: RunningTracing | null = null;
  let loaded: ReturnType<typeof checkRegistryModule>;
  try {
    // The same OTEL_* variables as the receiver's: this thread's spans (the handlers' own) go where its spans go.
    tracing = await startTracing(process.env, logger);
    loaded = checkRegistryModule((await import(data.registry)) as RegistryModule, { registry: data.registry });
  } catch (error) {
    post({ t: 'fatal', error: describe(error) });
    return;
  }
  const byName = new Map<string, HandlerDefinition>(loaded.handlers.map((h) => [h.name, h]));
  const schemas = loaded.payloads.schemas;
  const runner = createHandlerRunner({
    logger,
    clock: Date.now,
    handlerTimeoutMs: data.handlerTimeoutMs,
    steps: { journals: threadJournals, seal: createStepSeal(data.stepKey), span: stepSpans() },
    pods: () => Promise.resolve(podsClient),
  });

  async function run(m: Extract<ToThread, { t: 'run' }>): Promise<ThreadResult> {
    const h = byName.get(m.handler);
    if (!h) return { ok: false, permanent: false, error: `no handler named ${m.handler} in this thread's registry`, durationMs: 0, outcome: 'failed' };
    const payload = lazyPayload(m.delivery.body, undefined);
    try {
      payload();
    } catch (error) {
      if (!(error instanceof InvalidBodyError)) throw error;
      return { ok: false, permanent: true, error: error.detail, durationMs: 0, outcome: 'invalid_payload' };
    }
    let fail!: (error: unknown) => void;
    const strayed = new Promise<never>((_, reject) => (fail = reject));
    strayed.catch(() => {}); // only raced against the handler
    const running: { fail(error: unknown): void; error?: unknown } = { fail };
    failing.set(m.id, running);
    // A stray error of this call (a timer's throw, a promise left to reject) fails it, as its own throw would.
    const guarded: HandlerDefinition = { ...h, handle: (event, ctx) => Promise.race([Promise.resolve().then(() => h.handle(event, ctx)), strayed]) };
    const d = m.delivery;
    const delivery: Delivery = {
      eventId: d.eventId, eventType: d.eventType, signatureT: d.signatureT, body: d.body, headers: {}, receivedAt: d.receivedAt, lastReceivedAt: d.receivedAt,
      deliveryCount: 1, status: 'queued', attempts: d.attempts, lastError: null, nextAttemptAt: null, processedAt: null,
    };
    const payloadFor = typedPayloads(schemas, d.eventType, payload);
    const call = () =>
      calls.run({ id: m.id, handler: h.name }, () => {
        // Its first synchronous part runs here, not in a callback: marked by hand.
        runningNow[0] = m.id;
        try {
          return runner.run({ handler: guarded, delivery, payload: () => payloadFor(h), attempt: m.attempt, context: m.context, claimId: m.claimId });
        } finally {
          runningNow[0] = 0;
        }
      });
    const parent = m.traceParent ? parseTraceParent(m.traceParent) : null;
    try {
      const r = await (parent ? context.with(trace.setSpanContext(ROOT_CONTEXT, parent), call) : call());
      // One turn more: a promise the handler left to reject as it returned is reported at the end
      // of this turn, and fails the run it came from rather than passing for a success.
      await new Promise((resolve) => setImmediate(resolve));
      if (r.ok && running.error !== undefined) {
        const e = running.error;
        return { ok: false, permanent: false, error: describe(e), errorName: e instanceof Error ? e.name : undefined, durationMs: r.durationMs, outcome: 'failed' };
      }
      return { ok: r.ok, permanent: r.permanent, error: r.error, errorName: r.errorName, durationMs: r.durationMs, outcome: r.outcome, waitUntil: r.waitUntil, stepAttempt: r.stepAttempt, steps: r.steps };
    } finally {
      failing.delete(m.id);
    }
  }

  port.on('message', (m: ToThread) => {
    if (m.t === 'pods') {
      const waiting = podsRequests.get(m.rid);
      podsRequests.delete(m.rid);
      if (m.ok) waiting?.resolve(m.value);
      else waiting?.reject(podsErrorFrom(m.error));
    } else if (m.t === 'steps') {
      const waiting = stepRequests.get(m.rid);
      stepRequests.delete(m.rid);
      if (m.ok) waiting?.resolve(m.records);
      else waiting?.reject(new Error(m.error));
    } else if (m.t === 'run') {
      void run(m).then(
        (result) => post({ t: 'done', id: m.id, result }),
        (error: unknown) => post({ t: 'done', id: m.id, result: { ok: false, permanent: false, error: describe(error), durationMs: 0, outcome: 'failed' } }),
      );
    } else if (m.t === 'abort') {
      if (m.eventId === undefined) runner.abortAll(new Error(m.reason));
      else runner.abortDelivery(m.eventId, new Error(m.reason));
    } else if (m.t === 'close') {
      void (tracing?.shutdown() ?? Promise.resolve()).finally(() => process.exit(0));
    }
  });
  post({ t: 'ready' });
}

void start();
