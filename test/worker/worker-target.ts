import { createExecutionContext, createScheduledController, waitOnExecutionContext } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import type { HttpTarget, HttpTargetOptions } from '../contract/http-contract.js';
import type { HandlerDefinition } from '../../src/core/events/define-handler.js';
import type { RegistryPayloads } from '../../src/core/events/registry-module.js';
import type { PodhookApp } from '../../src/http/create-app.js';
import { silentLogger, type Logger } from '../../src/core/observability/logger.js';
import { createWorker } from '../../src/worker/create-worker.js';
import { createD1Store } from '../../src/store/d1/d1-store.js';
import type { WorkerEnv } from '../../src/worker/worker-env.js';
import { WORKER_SECRETS_TTL_MS } from '../../src/worker/worker-runtime.js';

/** Empties podhook's tables (the schema and the migration ledger stay), so a test starts clean. */
export async function emptyD1(db: D1Database): Promise<void> {
  await db.batch(['handler_runs', 'handler_attempts', 'ordered_runs', 'order_keys', 'deliveries', 'webhook_secrets', 'heartbeats', 'handler_registrations', 'backfills', 'rate_tokens', 'api_keys', 'handler_steps'].map((table) => db.prepare(`DELETE FROM ${table}`)));
}

export interface WorkerTarget extends HttpTarget {
  worker: ExportedHandler<WorkerEnv>;
  env: WorkerEnv;
  now(): number;
}

export interface WorkerTargetOptions {
  db?: D1Database;
  handlers?: readonly HandlerDefinition[];
  /** What a registry's generated module exports (schemas, shapes, fields). */
  payloads?: RegistryPayloads;
  logger?: Logger;
  /** The team's middleware and routes (as src/app.ts supplies them). */
  customize?: (app: PodhookApp) => void;
  /** Extra variables (wrangler.toml's `[vars]` apply first). */
  vars?: Partial<Record<Exclude<keyof WorkerEnv, 'DB'>, string>>;
}

/**
 * The Worker's `fetch` handler on an emptied D1 database, inside workerd, with an injected
 * clock. Each call gets its own ExecutionContext and resolves once its `waitUntil` work is done.
 */
export async function openWorkerTarget(
  { secrets, maxBodyBytes }: HttpTargetOptions,
  { db = env.CONTRACT_DB, handlers = [], payloads, logger = silentLogger, vars = {}, customize }: WorkerTargetOptions = {},
): Promise<WorkerTarget> {
  await emptyD1(db);
  let now = Date.now();
  const worker = createWorker({ handlers, payloads, logger, clock: () => now, random: () => 0.5, customize });
  const workerEnv: WorkerEnv = {
    ...env,
    DB: db,
    SVC_WEBHOOK_SECRET: secrets.join(','),
    MAX_BODY_BYTES: maxBodyBytes === undefined ? env.MAX_BODY_BYTES : String(maxBodyBytes),
    // As on Node, the contract sees rows as ingest left them; dispatch tests turn it on.
    DISPATCHER: 'off',
    ...vars,
  };
  return {
    worker,
    env: workerEnv,
    store: createD1Store(db),
    async fetch(request) {
      const ctx = createExecutionContext();
      const response = await worker.fetch!(request as Request<unknown, IncomingRequestCfProperties>, workerEnv, ctx);
      await waitOnExecutionContext(ctx);
      return response;
    },
    setNow(ms) {
      now = ms;
    },
    now: () => now,
    close() {},
    secretRemovalBoundMs: WORKER_SECRETS_TTL_MS,
  };
}

/** One run of the cron trigger (`* * * * *`) at the target's clock, awaited with its waitUntil work. */
export async function runCron(t: WorkerTarget): Promise<void> {
  const ctx = createExecutionContext();
  await t.worker.scheduled!(createScheduledController({ scheduledTime: t.now(), cron: '* * * * *' }), t.env, ctx);
  await waitOnExecutionContext(ctx);
}
