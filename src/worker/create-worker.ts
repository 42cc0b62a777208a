import { createAlertMemory, type AlertMemory } from '../core/alerts/alerter.js';
import { systemClock } from '../core/clock.js';
import { ConfigError } from '../core/errors.js';
import type { Logger } from '../core/observability/logger.js';
import { errorBody } from '../http/create-app.js';
import { createConsoleLogger } from './console-logger.js';
import type { WorkerEnv } from './worker-env.js';
import type { RuntimeOptions } from '../runtime/wire-receiver.js';
import { createWorkerRuntime } from './worker-runtime.js';
import { newWaitersMemory } from '../core/waits/index.js';

export interface CreateWorkerOptions extends RuntimeOptions {
  /** Defaults to JSON lines on the console at `LOG_LEVEL`. */
  logger?: Logger;
}

/** Whether this cron run also prunes: once an hour (the minute-0 run), as the Node service does. */
export function isPruneRun(scheduledTime: number): boolean {
  return new Date(scheduledTime).getUTCMinutes() === 0;
}

/**
 * The Worker's handlers. `fetch` builds the app from the bindings for each request and hands
 * the dispatcher's drain to `ctx.waitUntil` once a delivery is stored, so the `200` never
 * waits for handlers. `scheduled` (the cron trigger) hands the dispatcher one page of a running
 * backfill, runs whatever is queued or due for retry, including deliveries whose `waitUntil` was
 * cut short, prunes old rows once an hour, and records
 * the heartbeat whose gaps are downtimes (alerts go out under `waitUntil`).
 *
 * @example
 * export default createWorker({ handlers }); // src/worker/index.ts
 */
export function createWorker(options: CreateWorkerOptions = {}): ExportedHandler<WorkerEnv> {
  // Per isolate, not per request: rate limits and the failing-handler window span requests.
  let memory: AlertMemory | undefined;
  const alertMemory = (minIntervalMs: number) => (memory ??= createAlertMemory({ clock: options.clock ?? systemClock, minIntervalMs }));
  const waitersMemory = newWaitersMemory();
  const runtimeFor = (env: WorkerEnv, ctx: ExecutionContext) =>
    createWorkerRuntime({ ...options, env, waitUntil: (work) => ctx.waitUntil(work), alertMemory, waitersMemory });

  return {
    async fetch(request, env, ctx) {
      let runtime: ReturnType<typeof runtimeFor>;
      try {
        runtime = runtimeFor(env, ctx);
      } catch (error) {
        if (!(error instanceof ConfigError)) throw error;
        // Nothing was stored: a 5xx makes the sender retry once the variable is fixed.
        (options.logger ?? createConsoleLogger()).error({ err: error.message }, 'invalid configuration');
        return Response.json(errorBody('unavailable', 'The receiver is misconfigured; retry later.'), {
          status: 503,
          headers: { 'retry-after': '60' },
        });
      }
      return runtime.app.fetch(request, env, ctx);
    },

    async scheduled(controller, env, ctx) {
      const runtime = runtimeFor(env, ctx);
      const { dispatcher, config, logger } = runtime;
      try {
        // A gap since the previous cron's heartbeat is a downtime; its alert goes out under waitUntil.
        await runtime.heartbeat().catch((error: Error) => logger.error({ err: error.message }, 'heartbeat failed'));
        if (config.dispatch.enabled) {
          // One page of a running backfill, handed to the drain below with whatever else is due.
          await runtime.backfillStep().catch((error: Error) => logger.error({ err: error.message }, 'backfill step failed'));
          await dispatcher.runUntilIdle();
        }
        if (isPruneRun(controller.scheduledTime)) await runtime.prune();
      } catch (error) {
        logger.error({ err: (error as Error).message, cron: controller.cron }, 'scheduled run failed');
        throw error;
      }
    },
  };
}
