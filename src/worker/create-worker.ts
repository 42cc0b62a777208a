import { ConfigError } from '../core/errors.js';
import type { Logger } from '../core/observability/logger.js';
import { errorBody } from '../http/create-app.js';
import { createConsoleLogger } from './console-logger.js';
import type { WorkerEnv } from './worker-env.js';
import type { RuntimeOptions } from '../runtime/wire-receiver.js';
import { inRequest } from './request-scope.js';
import { createWorkerRuntime, type WorkerRuntime } from './worker-runtime.js';

export interface CreateWorkerOptions extends RuntimeOptions {
  /** Defaults to JSON lines on the console at `LOG_LEVEL`. */
  logger?: Logger;
}

/** Whether this cron run also prunes: once an hour (the minute-0 run), as the Node service does. */
export function isPruneRun(scheduledTime: number): boolean {
  return new Date(scheduledTime).getUTCMinutes() === 0;
}

/**
 * The Worker's handlers. The receiver is wired once per isolate, per binding set (`env`: workerd
 * hands every invocation of an isolate the same one), and each invocation runs in a request scope
 * of its own (its `waitUntil`, its dispatcher). `fetch` hands a stored delivery's handlers to
 * `ctx.waitUntil`, so the `200` never waits for them. `scheduled` (the cron trigger) records the
 * heartbeat whose gaps are downtimes (alerts go out under `waitUntil`), hands its dispatcher one
 * page of a running backfill, runs a page of what is queued or due (retries, woken sleeps,
 * deliveries whose `waitUntil` was cut short), and prunes old rows once an hour.
 *
 * @example
 * export default createWorker({ handlers }); // src/worker/index.ts
 */
export function createWorker(options: CreateWorkerOptions = {}): ExportedHandler<WorkerEnv> {
  /** The wiring of each binding set seen, or why its variables are invalid (kept, not re-parsed). */
  const runtimes = new WeakMap<WorkerEnv, WorkerRuntime | ConfigError>();
  const runtimeFor = (env: WorkerEnv): WorkerRuntime => {
    let runtime = runtimes.get(env);
    if (runtime === undefined) {
      try {
        runtime = createWorkerRuntime({ ...options, env });
      } catch (error) {
        if (!(error instanceof ConfigError)) throw error;
        runtime = error;
      }
      runtimes.set(env, runtime);
    }
    if (runtime instanceof ConfigError) throw runtime;
    return runtime;
  };

  return {
    async fetch(request, env, ctx) {
      let runtime: WorkerRuntime;
      try {
        runtime = runtimeFor(env);
      } catch (error) {
        if (!(error instanceof ConfigError)) throw error;
        // Nothing was stored: a 5xx makes the sender retry once the variable is fixed.
        (options.logger ?? createConsoleLogger()).error({ err: error.message }, 'invalid configuration');
        return Response.json(errorBody('unavailable', 'The receiver is misconfigured; retry later.'), {
          status: 503,
          headers: { 'retry-after': '60' },
        });
      }
      return inRequest(ctx, () => runtime.app.fetch(request, env, ctx));
    },

    async scheduled(controller, env, ctx) {
      const runtime = runtimeFor(env);
      const { config, logger } = runtime;
      await inRequest(ctx, async () => {
        try {
          // A gap since the previous cron's heartbeat is a downtime; its alert goes out under waitUntil.
          await runtime.heartbeat().catch((error: Error) => logger.error({ err: error.message }, 'heartbeat failed'));
          if (config.dispatch.enabled) {
            // One page of a running backfill, handed to the drain below with whatever else is due.
            await runtime.backfillStep().catch((error: Error) => logger.error({ err: error.message }, 'backfill step failed'));
            await runtime.drainPage();
          }
          if (isPruneRun(controller.scheduledTime)) await runtime.prune();
        } catch (error) {
          logger.error({ err: (error as Error).message, cron: controller.cron }, 'scheduled run failed');
          throw error;
        }
      }, runtime.cronScope);
    },
  };
}
