/**
 * What the Worker reads from its environment: the D1 binding, the signing secret (a Worker
 * secret: `wrangler secret put SVC_WEBHOOK_SECRET`, `.dev.vars` locally) and the `[vars]` of
 * wrangler.toml. Variables are strings, validated by the same `parseConfig` as on Node.
 */
export interface WorkerEnv {
  DB: D1Database;
  SVC_WEBHOOK_SECRET?: string;
  WEBHOOK_PATH?: string;
  MAX_BODY_BYTES?: string;
  LOG_LEVEL?: string;
  RETENTION_DAYS?: string;
  DISPATCHER?: string;
  DISPATCH_CONCURRENCY?: string;
  DISPATCH_MAX_ATTEMPTS?: string;
  HANDLER_TIMEOUT_MS?: string;
  RETRY_BASE_MS?: string;
  RETRY_MAX_MS?: string;
  ORDER_HOLD_MS?: string;
  /** Alerts: a secret when its URL carries a token (`wrangler secret put ALERT_WEBHOOK_URL`). */
  ALERT_WEBHOOK_URL?: string;
  ALERT_DOWNTIME_MINUTES?: string;
  ALERT_MIN_INTERVAL_MINUTES?: string;
  /** Turns on the admin API and inspector (a Worker secret: `wrangler secret put ADMIN_TOKEN`). */
  ADMIN_TOKEN?: string;
  /** The service's compute host and API key (a Worker secret: `wrangler secret put SVC_API_KEY`), for the pod client. */
  SVC_BASE_URL?: string;
  SVC_API_KEY?: string;
  /** The account's buckets as calls per window (`60/1m`). */
  SVC_WRITE_LIMIT?: string;
  SVC_READ_LIMIT?: string;
  SVC_KEY_MINT_LIMIT?: string;
  /** The names the spec does not show (docs/pods-client.md). */
  SVC_LIST_PAGE_SIZE_PARAM?: string;
  SVC_LIST_CURSOR_PARAM?: string;
  SVC_LIST_EXTERNAL_REF_PARAM?: string;
  SVC_ACTION_BODY_PROPERTY?: string;
  /** Seals sensitive durable steps' results (a Worker secret: `wrangler secret put STEP_ENCRYPTION_KEY`). */
  STEP_ENCRYPTION_KEY?: string;
}

/** The variables of `WorkerEnv` that configure podhook (everything but the bindings). */
export const WORKER_VARIABLES = [
  'SVC_WEBHOOK_SECRET',
  'WEBHOOK_PATH',
  'MAX_BODY_BYTES',
  'LOG_LEVEL',
  'RETENTION_DAYS',
  'DISPATCHER',
  'DISPATCH_CONCURRENCY',
  'DISPATCH_MAX_ATTEMPTS',
  'HANDLER_TIMEOUT_MS',
  'RETRY_BASE_MS',
  'RETRY_MAX_MS',
  'ORDER_HOLD_MS',
  'ALERT_WEBHOOK_URL',
  'ALERT_DOWNTIME_MINUTES',
  'ALERT_MIN_INTERVAL_MINUTES',
  'ADMIN_TOKEN',
  'STEP_ENCRYPTION_KEY',
  'SVC_BASE_URL',
  'SVC_API_KEY',
  'SVC_WRITE_LIMIT',
  'SVC_READ_LIMIT',
  'SVC_KEY_MINT_LIMIT',
  'SVC_LIST_PAGE_SIZE_PARAM',
  'SVC_LIST_CURSOR_PARAM',
  'SVC_LIST_EXTERNAL_REF_PARAM',
  'SVC_ACTION_BODY_PROPERTY',
] as const satisfies readonly (keyof WorkerEnv)[];

/** The configuring variables as the plain string map `parseConfig` takes. */
export function workerVariables(env: WorkerEnv): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const name of WORKER_VARIABLES) {
    const value = env[name];
    // A `[vars]` entry may be a number or boolean in TOML; the schema validates strings.
    out[name] = value === undefined || value === null ? undefined : String(value);
  }
  return out;
}
