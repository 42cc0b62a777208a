import type { EventType } from '../core/events/event-types.js';
import type { HandlerDefinition, PodEvent } from '../core/events/define-handler.js';
import type { HandlerOutcome } from '../core/dispatch/handler-result.js';
import { createLineWriter } from '../core/runner/handler-lines.js';
import { createInThisThreadRunner } from '../core/runner/in-this-thread.js';
import { createAsyncScope } from '../runtime/async-scope.js';
import { captureLogs, type LogLine } from './capture-logs.js';
import type { TestSteps } from './test-steps.js';

export interface RunHandlerOptions {
  /** The call's time limit (default: the handler's own `timeoutMs`, else 30 s, as the dispatcher). */
  timeoutMs?: number;
  /** Durable steps kept across runs (`createTestSteps()`); without it, a handler's `ctx.step` fails saying so. */
  steps?: TestSteps;
  /** Ends the run right after its Nth step is recorded, as if the process died there (needs `steps`). */
  stopAfterStep?: number;
}

/** What a run did with its durable steps. */
export interface RunStepsReport {
  /** The steps whose function ran in this run, in order. */
  ran: string[];
  /** The steps whose recorded result was given back without running them. */
  replayed: string[];
}

export interface RunHandlerResult {
  /** Whether the dispatcher would record this run as a success. */
  ok: boolean;
  /** How the run ended, as the `handler run` log line says. */
  outcome: HandlerOutcome;
  /** What the handler threw; for a time limit or a payload its schema refused, an Error saying so. */
  error?: unknown;
  /** The handler's own log lines (not the dispatcher's `handler run` line). */
  logs: LogLine[];
  durationMs: number;
  /** Parked at a sleep or a wait: until when, and at which (the next run with the same `steps` wakes a sleep; a wait, once `steps.deliver` hands it its event or `steps.now` passes `until`). */
  parked?: { until: Date; step: string };
  /** Ended after this step, by `stopAfterStep`. */
  stoppedAfterStep?: number;
  /** What the run did with its steps (empty lists when it used none or had no `steps`). */
  steps: RunStepsReport;
}

/** The run ended where the test asked, as a crash would have ended it. */
class StoppedAfterStep extends Error {
  constructor(readonly seq: number) {
    super(`stopped after step ${seq} (stopAfterStep)`);
  }
}

const DEFAULT_TIMEOUT_MS = 30_000;

/**
 * Runs one handler on one event through the dispatcher's own runner: the handler's schema, its
 * time limit with an AbortSignal, its log lines. Never throws for a failing handler.
 *
 * @example
 * const result = await runHandler(handler, testEvent('pod.created'));
 * expect(result.ok).toBe(true);
 */
export async function runHandler(
  handler: HandlerDefinition,
  event: PodEvent<EventType, unknown>,
  { timeoutMs, steps, stopAfterStep }: RunHandlerOptions = {},
): Promise<RunHandlerResult> {
  const { logger, lines } = captureLogs();
  let thrown: { value: unknown } | undefined;
  const report: RunStepsReport = { ran: [], replayed: [] };
  let stopped: number | undefined;
  // The kit's journals, watched: which steps ran, which were given back, and where to stop.
  const journals = steps && ((run: Parameters<TestSteps['journals']>[0]) => {
    const inner = steps.journals(run);
    return {
      load: () => inner.load(),
      wait: inner.wait && ((ask: Parameters<NonNullable<typeof inner.wait>>[0]) => inner.wait!(ask)),
      async save(step: Parameters<ReturnType<TestSteps['journals']>['save']>[0]) {
        await inner.save(step);
        if (step.kind === 'step' && step.state !== 'sleeping') {
          report.ran.push(step.name);
          steps.ran.push(step.name);
        }
        if (stopAfterStep !== undefined && step.seq === stopAfterStep && step.state === 'done') {
          stopped = step.seq;
          throw new StoppedAfterStep(step.seq);
        }
      },
    };
  });
  const runner = createInThisThreadRunner({
    // Every level, as the handler wrote it: the kit's logs are the test's to read.
    lines: createLineWriter(logger),
    // Steps know which of them a call comes from, as in podhook serve (nested steps refused, ctx.pods' request ids).
    scope: createAsyncScope(),
    levelFloor: 0,
    clock: steps ? () => steps.now : () => performance.now(),
    handlerTimeoutMs: timeoutMs ?? handler.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    steps: steps && journals ? { journals, seal: steps.seal, replayed: (name) => void report.replayed.push(name), locator: steps.locator } : undefined,
  });
  // The same definition, keeping what it threw (the runner records only its text).
  const watched: HandlerDefinition = {
    ...handler,
    timeoutMs: timeoutMs ?? handler.timeoutMs,
    handle: async (e, ctx) => {
      try {
        return await handler.handle(e, ctx);
      } catch (error) {
        thrown = { value: error };
        throw error;
      }
    },
  };
  const ran = await runner.run({
    delivery: { eventId: event.id, eventType: event.type, signatureT: event.signatureTimestamp, body: event.rawBody, receivedAt: event.receivedAt.getTime() },
    parsed: event.payload,
    calls: [{ handler: watched, attempt: event.attempt }],
    claimId: '',
  });
  const result = ran.results?.[0] ?? { ok: false, outcome: 'invalid_payload' as const, durationMs: 0, error: ran.invalidBody ?? null, waitUntil: undefined };
  const { outcome, durationMs } = result;
  const extra: Partial<RunHandlerResult> = { steps: report };
  if (stopped !== undefined) extra.stoppedAfterStep = stopped;
  if (outcome === 'parked' && steps && result.waitUntil !== undefined) {
    const at = steps.records.find((r) => r.eventId === event.id && r.handler === handler.name && r.kind !== 'step' && r.state === 'sleeping');
    extra.parked = { until: new Date(result.waitUntil), step: at?.name ?? '' };
    // Sleeps advance the kit's clock: the next run with these steps wakes. A wait waits for the
    // test: an event handed with steps.deliver, or the clock moved past its timeout.
    if (at?.kind !== 'wait') steps.now = Math.max(steps.now, result.waitUntil);
  }
  const logs = lines;
  if (result.ok) return { ok: true, outcome, logs, durationMs, steps: report, ...extra };
  if (outcome === 'parked') return { ok: false, outcome, logs, durationMs, steps: report, ...extra };
  const error = outcome === 'failed' && thrown ? thrown.value : new Error(result.error ?? outcome);
  return { ok: false, outcome, error, logs, durationMs, steps: report, ...extra };
}
