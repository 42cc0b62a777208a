import { parseStepKey } from './steps/seal.js';
import { z } from 'zod';
import { ConfigError } from './errors.js';
import { splitSecrets } from './signing/secret-source.js';
import { alertUrlProblem } from './alerts/alert-url.js';
import { DEFAULT_BUCKET_SIZES, formatBucketSize, parseBucketSize, type BucketName } from './limits/bucket-size.js';
import type { RateBucketSize } from './limits/rate-bucket-store.js';
import { baseUrlProblem } from './pods/base-url.js';
import { DEFAULT_PODS_WIRE, type PodsWireNames } from './pods/pods-wire.js';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** Unset and empty both mean "use the default". */
const optional = <T extends z.ZodType>(schema: T) =>
  z.preprocess((v) => (v === '' ? undefined : v), schema.optional());

const integer = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d+$/, `must be a whole number from ${min} to ${max}`)
    .transform(Number)
    .pipe(z.number().int().min(min, `must be at least ${min}`).max(max, `must be at most ${max}`));

/** The shortest admin token accepted: long enough that guessing it online is hopeless. */
export const MIN_ADMIN_TOKEN_LENGTH = 32;

/** Variables whose values never appear in an error message. */
const SECRET_VARIABLES = new Set(['SVC_WEBHOOK_SECRET', 'ADMIN_TOKEN', 'METRICS_TOKEN', 'SVC_API_KEY', 'STEP_ENCRYPTION_KEY']);

/** A bucket size such as `60/1m` (see `parseBucketSize`). */
const bucketSize = z.string().superRefine((v, ctx) => {
  if (!parseBucketSize(v)) ctx.addIssue({ code: 'custom', message: 'must be calls per window, such as 60/1m, 240/1m, 30/1h or 60/2s' });
});

/** A query parameter or body property name the spec does not show. */
const wireName = z.string().regex(/^[A-Za-z0-9_.\[\]-]{1,64}$/, 'must be 1 to 64 of A-Za-z0-9_.[]-');

const ConfigSchema = z.object({
  PORT: optional(integer(0, 65535)),
  HOST: optional(z.string().min(1)),
  DATABASE_PATH: optional(z.string().min(1)),
  DATABASE_URL: optional(z.string().superRefine((v, ctx) => {
    const problem = databaseUrlProblem(v);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  })),
  SVC_WEBHOOK_SECRET: optional(z.string()),
  WEBHOOK_PATH: optional(z.string().regex(/^\/[A-Za-z0-9._~\/-]*$/, 'must be a path starting with "/"')),
  MAX_BODY_BYTES: optional(integer(1, 16 * 1024 * 1024)),
  LOG_LEVEL: optional(z.enum(LOG_LEVELS, { error: `must be one of ${LOG_LEVELS.join(', ')}` })),
  RETENTION_DAYS: optional(integer(2, 3650)),
  DISPATCHER: optional(z.enum(['on', 'off'], { error: 'must be on or off' })),
  DISPATCH_CONCURRENCY: optional(integer(1, 1000)),
  DISPATCH_MAX_ATTEMPTS: optional(integer(1, 100)),
  DISPATCH_POLL_MS: optional(integer(10, 3_600_000)),
  HANDLER_TIMEOUT_MS: optional(integer(1, 3_600_000)),
  HANDLER_THREADS: optional(integer(0, 64)),
  HANDLER_THREAD_HEAP_MB: optional(integer(16, 65_536)),
  LEASE_MS: optional(integer(300, 3_600_000)),
  ORDER_HOLD_MS: optional(integer(0, 60_000)),
  RETRY_BASE_MS: optional(integer(1, 3_600_000)),
  RETRY_MAX_MS: optional(integer(1, 86_400_000)),
  ALERT_WEBHOOK_URL: optional(z.string().superRefine((v, ctx) => {
    const problem = alertUrlProblem(v);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  })),
  ALERT_DOWNTIME_MINUTES: optional(integer(1, 10_080)),
  ALERT_MIN_INTERVAL_MINUTES: optional(integer(1, 1440)),
  METRICS_TOKEN: optional(z.string().min(16, 'must be at least 16 characters')),
  MAX_CONNECTIONS: optional(integer(1, 1_000_000)),
  MAX_INFLIGHT_BODY_BYTES: optional(integer(1024, 4 * 1024 * 1024 * 1024)),
  HEADERS_TIMEOUT_MS: optional(integer(100, 600_000)),
  REQUEST_TIMEOUT_MS: optional(integer(100, 3_600_000)),
  KEEP_ALIVE_TIMEOUT_MS: optional(integer(100, 600_000)),
  SHUTDOWN_GRACE_MS: optional(integer(0, 3_600_000)),
  ADMIN_TOKEN: optional(z.string().min(MIN_ADMIN_TOKEN_LENGTH, `must be at least ${MIN_ADMIN_TOKEN_LENGTH} characters (e.g. openssl rand -hex 32)`)),
  SVC_API_KEY: optional(z.string()),
  STEP_ENCRYPTION_KEY: optional(z.string().refine((v) => parseStepKey(v) !== null, 'must be 32 bytes as 64 hex digits or base64 (openssl rand -hex 32)')),
  SVC_BASE_URL: optional(z.string().superRefine((v, ctx) => {
    const problem = baseUrlProblem(v);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  })),
  SVC_WRITE_LIMIT: optional(bucketSize),
  SVC_READ_LIMIT: optional(bucketSize),
  SVC_KEY_MINT_LIMIT: optional(bucketSize),
  SVC_LIST_PAGE_SIZE_PARAM: optional(wireName),
  SVC_LIST_CURSOR_PARAM: optional(wireName),
  SVC_LIST_EXTERNAL_REF_PARAM: optional(wireName),
  SVC_ACTION_BODY_PROPERTY: optional(wireName),
});

/** Never echoed in an error line: a secret, or a URL that may carry one (Slack's webhook paths, a password in a URL). */
const UNSHOWN = new Set([...SECRET_VARIABLES, 'ALERT_WEBHOOK_URL', 'DATABASE_URL', 'SVC_BASE_URL']);

export const DEFAULT_SHUTDOWN_GRACE_MS = 10_000;
/** How long a dispatch lease lasts unrenewed: a killed replica's work is taken over after it. */
export const DEFAULT_LEASE_MS = 15_000;

/** The receiver's configuration, from the environment, with defaults applied. */
export interface Config {
  port: number;
  host: string;
  databasePath: string;
  /** `postgres://…`: PostgreSQL instead of the SQLite file at `databasePath` (wins when both are set). */
  databaseUrl: string | null;
  /** Secrets from `SVC_WEBHOOK_SECRET` (comma-separated; all accepted, for rotation). */
  secrets: string[];
  webhookPath: string;
  maxBodyBytes: number;
  logLevel: (typeof LOG_LEVELS)[number];
  retentionDays: number;
  /** On SIGTERM/SIGINT: how long in-flight requests and handlers get to finish. */
  shutdownGraceMs: number;
  dispatch: {
    /** `off` runs ingest only (another process dispatches from the same file). */
    enabled: boolean;
    concurrency: number;
    maxAttempts: number;
    pollMs: number;
    handlerTimeoutMs: number;
    /** How long a dispatch lease lasts unrenewed (renewed every third of it while handlers run). */
    leaseMs: number;
    retryBaseMs: number;
    retryMaxMs: number;
    /** Ordered handlers: deliveries received within this of each other are put in `at` order before any runs. */
    orderHoldMs: number;
    /**
     * Node: worker threads that run handler modules (0: the receiver's own thread); null: the
     * default for the machine (one fewer than its cores, 1 to 4).
     */
    handlerThreads: number | null;
    /** Node: each handler thread's old-generation heap limit, in MB. */
    handlerThreadHeapMb: number;
  };
  alerts: {
    /** Where alerts are POSTed; null: alerts only go to the log. */
    webhookUrl: string | null;
    /** A gap in heartbeats longer than this is a downtime. */
    downtimeMinutes: number;
    /** At most one alert per kind and key in this time. */
    minIntervalMinutes: number;
  };
  /** `ADMIN_TOKEN`: the admin API and inspector (`/_podhook/*`) are off when null. */
  adminToken: string | null;
  /** `STEP_ENCRYPTION_KEY`: seals the results of sensitive durable steps; null: a sensitive step fails, naming it. */
  stepEncryptionKey: string | null;
  /** Bearer token `GET /metrics` asks for; unset: open (expose it only inside your network). */
  metricsToken: string | null;
  /** The service's pod surface as podhook calls it (the pod client, `podhook pods`). */
  pods: {
    /** `SVC_BASE_URL`: the compute host; null when unset. */
    baseUrl: string | null;
    /** `SVC_API_KEY`; null when unset (then the key stored by `podhook secrets add --api-key` is used). */
    apiKey: string | null;
    /** The account's buckets (`SVC_WRITE_LIMIT`, `SVC_READ_LIMIT`, `SVC_KEY_MINT_LIMIT`). */
    limits: Record<BucketName, RateBucketSize>;
    /** The names the spec does not show (`SVC_LIST_*_PARAM`, `SVC_ACTION_BODY_PROPERTY`). */
    wire: PodsWireNames;
  };
  /** What an unauthenticated client can hold on the Node server. */
  limits: {
    /** Open connections; beyond it new ones are closed at once. */
    maxConnections: number;
    /** Body bytes being read at once across all requests; beyond it 503 + Retry-After. */
    maxInflightBodyBytes: number;
    /** Time to receive a request's headers. */
    headersTimeoutMs: number;
    /** Time to receive a whole request. */
    requestTimeoutMs: number;
    /** How long an idle kept-alive connection stays open. */
    keepAliveTimeoutMs: number;
  };
}

/**
 * Validates the environment. Throws a ConfigError whose message is one line naming the
 * variable (and never echoing a secret's value).
 */
export function parseConfig(env: Record<string, string | undefined>): Config {
  const parsed = ConfigSchema.safeParse(env);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const name = String(issue.path[0] ?? 'environment');
    const shown = UNSHOWN.has(name) ? '' : ` (got ${JSON.stringify(env[name])})`;
    const message = name === 'RETENTION_DAYS' && issue.code === 'too_small'
      ? 'must be at least 2: the sender retries for about 22.4 hours and dedupe must outlive that'
      : issue.message;
    throw new ConfigError(`invalid configuration: ${name} ${message}${shown}`);
  }
  const e = parsed.data;
  return {
    port: e.PORT ?? 3000,
    host: e.HOST ?? '0.0.0.0',
    databasePath: e.DATABASE_PATH ?? './data/podhook.db',
    databaseUrl: e.DATABASE_URL ?? null,
    secrets: splitSecrets(e.SVC_WEBHOOK_SECRET),
    webhookPath: e.WEBHOOK_PATH ?? '/webhooks',
    maxBodyBytes: e.MAX_BODY_BYTES ?? 262_144,
    logLevel: e.LOG_LEVEL ?? 'info',
    retentionDays: e.RETENTION_DAYS ?? 30,
    shutdownGraceMs: e.SHUTDOWN_GRACE_MS ?? DEFAULT_SHUTDOWN_GRACE_MS,
    dispatch: {
      enabled: (e.DISPATCHER ?? 'on') === 'on',
      concurrency: e.DISPATCH_CONCURRENCY ?? 16,
      maxAttempts: e.DISPATCH_MAX_ATTEMPTS ?? 8,
      pollMs: e.DISPATCH_POLL_MS ?? 1000,
      handlerTimeoutMs: e.HANDLER_TIMEOUT_MS ?? 30_000,
      leaseMs: e.LEASE_MS ?? DEFAULT_LEASE_MS,
      retryBaseMs: e.RETRY_BASE_MS ?? 2_000,
      retryMaxMs: e.RETRY_MAX_MS ?? 15 * 60_000,
      orderHoldMs: e.ORDER_HOLD_MS ?? 2_000,
      handlerThreads: e.HANDLER_THREADS ?? null,
      handlerThreadHeapMb: e.HANDLER_THREAD_HEAP_MB ?? 256,
    },
    alerts: {
      webhookUrl: e.ALERT_WEBHOOK_URL ?? null,
      downtimeMinutes: e.ALERT_DOWNTIME_MINUTES ?? 5,
      minIntervalMinutes: e.ALERT_MIN_INTERVAL_MINUTES ?? 10,
    },
    adminToken: e.ADMIN_TOKEN ?? null,
    stepEncryptionKey: e.STEP_ENCRYPTION_KEY ?? null,
    metricsToken: e.METRICS_TOKEN ?? null,
    pods: {
      baseUrl: e.SVC_BASE_URL?.trim() ?? null,
      apiKey: e.SVC_API_KEY?.trim() || null,
      limits: {
        writes: sizeOf(e.SVC_WRITE_LIMIT, 'writes'),
        reads: sizeOf(e.SVC_READ_LIMIT, 'reads'),
        key_mints: sizeOf(e.SVC_KEY_MINT_LIMIT, 'key_mints'),
      },
      wire: {
        pageSizeParam: e.SVC_LIST_PAGE_SIZE_PARAM ?? DEFAULT_PODS_WIRE.pageSizeParam,
        cursorParam: e.SVC_LIST_CURSOR_PARAM ?? DEFAULT_PODS_WIRE.cursorParam,
        externalRefParam: e.SVC_LIST_EXTERNAL_REF_PARAM ?? DEFAULT_PODS_WIRE.externalRefParam,
        actionProperty: e.SVC_ACTION_BODY_PROPERTY ?? DEFAULT_PODS_WIRE.actionProperty,
      },
    },
    limits: {
      maxConnections: e.MAX_CONNECTIONS ?? 1024,
      maxInflightBodyBytes: e.MAX_INFLIGHT_BODY_BYTES ?? 32 * 1024 * 1024,
      headersTimeoutMs: e.HEADERS_TIMEOUT_MS ?? 10_000,
      requestTimeoutMs: e.REQUEST_TIMEOUT_MS ?? 30_000,
      keepAliveTimeoutMs: e.KEEP_ALIVE_TIMEOUT_MS ?? 5_000,
    },
  };
}

const sizeOf = (text: string | undefined, bucket: BucketName): RateBucketSize => (text === undefined ? DEFAULT_BUCKET_SIZES[bucket] : parseBucketSize(text)!);

/** The bucket sizes in force, as the variables write them (`writes 60/1m, …`), for log lines and the CLI. */
export const describeBucketSizes = (limits: Record<BucketName, RateBucketSize>): string =>
  (Object.entries(limits) as [BucketName, RateBucketSize][]).map(([name, size]) => `${name} ${formatBucketSize(size)}`).join(', ');

/** The dispatcher's tuning from the configuration, as `createDispatcher` takes it. */
export function dispatchTuning({ dispatch }: Config) {
  const { concurrency, maxAttempts, handlerTimeoutMs, leaseMs, retryBaseMs, retryMaxMs } = dispatch;
  return { concurrency, maxAttempts, handlerTimeoutMs, leaseMs, retryBaseMs, retryMaxMs };
}

/** Why DATABASE_URL cannot be used (never quoting it: it holds a password), or null. */
function databaseUrlProblem(value: string): string | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'must be a URL like postgres://USER:PASS@HOST:5432/DB';
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') return 'must start with postgres:// or postgresql://';
  if (!url.hostname) return 'must name a host, as in postgres://USER:PASS@HOST:5432/DB';
  if (url.pathname.length <= 1) return 'must name a database, as in postgres://USER:PASS@HOST:5432/DB';
  return null;
}

/** Which store the configuration selects, for log lines and CLI messages: never the password. */
export function describeStore({ databaseUrl, databasePath }: Pick<Config, 'databaseUrl' | 'databasePath'>): { store: 'postgres' | 'sqlite'; database: string } {
  if (databaseUrl === null) return { store: 'sqlite', database: databasePath };
  const url = new URL(databaseUrl);
  const user = url.username ? `${decodeURIComponent(url.username)}@` : '';
  return { store: 'postgres', database: `postgres://${user}${url.host}${url.pathname}` };
}
