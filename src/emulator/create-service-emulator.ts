import { Hono } from 'hono';
import { validateCreateWebhookBody } from '../service-api/create-webhook-body.js';
import { WEBHOOKS_PATH, type Webhook } from '../service-api/webhook.js';
import { systemClock, type Clock } from '../core/clock.js';
import { PodhookError } from '../core/errors.js';
import { defaultPayload } from '../core/events/default-payloads.js';
import { EVENT_TYPES, isEventType, type EventType } from '../core/events/event-types.js';
import { silentLogger, type Logger } from '../core/observability/logger.js';
import { UUID } from '../core/ingest/receive-delivery.js';
import { constantTimeEqual, createWebSignatureCrypto, type SignatureCrypto } from '../core/signing/signature-crypto.js';
import { bytesToHex } from '../core/signing/signature-header.js';
import { withBoundedBody } from '../http/bounded-request.js';
import { errorBody } from '../http/create-app.js';
import { readBodyCapped } from '../http/read-body.js';
import { requestId } from '../http/request-id.js';
import { DEFAULT_BUCKET_SIZES, type BucketName } from '../core/limits/bucket-size.js';
import { DEFAULT_PODS_WIRE, type PodsWireNames } from '../core/pods/pods-wire.js';
import { createDeliveryScheduler, type DeliveryRecord, type EmulatedWebhook } from './delivery-scheduler.js';
import { createEmulatedPods, type EmulatedPod, type EmulatedPods, type QueuedActionRecord } from './emulated-pods.js';
import { jsonBody } from './json-body.js';
import { podRoutes } from './pod-routes.js';
import { createRequestBucket, type RequestBucket } from './request-bucket.js';

export interface ServiceEmulatorOptions {
  /** The one account's compute API key, expected in `X-API-Key`. */
  apiKey: string;
  /** Accept local webhook URLs (http, 127.0.0.1, localhost…) so deliveries can reach a local receiver. */
  allowLocalUrls?: boolean;
  /** Webhooks per account (spec: 10). */
  webhookLimit?: number;
  /** The shared write bucket: requests per window (spec: 60 a minute): chat tickets, actions, webhook creation. */
  writeLimit?: number;
  writeWindowMs?: number;
  /** The shared read bucket (spec: 240 a minute): the pod list and the poll route. */
  readLimit?: number;
  readWindowMs?: number;
  /** Key minting (spec: 30 an hour). */
  keyMintLimit?: number;
  keyMintWindowMs?: number;
  /** Pods made at start (default 0; `podhook emulate` seeds 3). */
  seedPods?: number;
  /** How long after `diagnose` or `logs` is queued its `last_result` is written: ms, or [min, max] (default 60 to 120 s). */
  resultDelayMs?: number | readonly [number, number];
  /** The names the spec does not show, as the pod client sends them (default: the client's defaults). */
  wire?: Partial<PodsWireNames>;
  /** Multiplies the retry schedule (1, 5, 15, 60, 180, 360, 720 minutes): 0.001 makes a minute 60 ms. */
  timeScale?: number;
  /** How long one delivery attempt may take. */
  deliveryTimeoutMs?: number;
  clock?: Clock;
  /** Used for deliveries. */
  fetch?: typeof fetch;
  crypto?: SignatureCrypto;
  logger?: Logger;
  /**
   * The most bytes of a request body read (default `EMULATOR_MAX_BODY_BYTES`, podhook's own
   * `MAX_BODY_BYTES` default): a larger one is a 413 `payload_too_large`, read no further. No
   * route but the gated `/pods/v1` ones needs a key, so what anyone can make it hold is bounded.
   */
  maxBodyBytes?: number;
  /** Sees every `/pods/v1` request as it arrives (tests check the exact headers and body). */
  onRequest?: (request: Request) => void;
  generateSecret?: () => string;
}

/** An error the emulator answers with, instead of the real outcome, for the next `count` `/pods/v1` requests. */
export interface Fault {
  count: number;
  /** Default 500. */
  status?: number;
  /** Default `internal`. */
  code?: string;
  message?: string;
  details?: Record<string, unknown>;
}

/** An event to emit: `data` is the delivered body (a JSON object, default a plausible one); `id` defaults to a fresh uuid. */
export interface EmitEvent {
  type: EventType;
  data?: Record<string, unknown>;
  id?: string;
}

export interface ServiceEmulator {
  app: Hono<{ Variables: { requestId: string } }>;
  injectFault(fault: Fault): void;
  /** Delivers an event to every webhook that takes its type (and has not been disabled). */
  emit(event: EmitEvent): { id: string; type: EventType; webhook_ids: string[] };
  webhooks(): Webhook[];
  deliveries(): readonly DeliveryRecord[];
  /** The account's pods (tests add and remove them: `pods.add()`, `pods.remove(id)`). */
  pods: EmulatedPods;
  /** Every action queued, oldest first, with its request id. */
  queuedActions(): readonly QueuedActionRecord[];
  /** Requests let through and refused (429) per bucket. */
  bucketCounts(): Record<BucketName, { allowed: number; refused: number }>;
  /** Stops retries and deliveries in flight. */
  close(): void;
}

/** The emulator's body cap by default: podhook's own `MAX_BODY_BYTES` default (256 KiB). */
export const EMULATOR_MAX_BODY_BYTES = 262_144;

export const SECRET_NOTE = 'Store this secret now: it is shown only once. If it is lost, rotate the endpoint.';

/**
 * A local stand-in of the service (`podhook emulate`, and the tests' fixture):
 *
 * - `POST /pods/v1/webhooks` as the spec describes: `X-API-Key` (401 `unauthorized`), the shared
 *   write bucket (429 `rate_limited` with `details.retry_after_seconds`), the body rules
 *   (400 `invalid_request` with `details`, the same validator the CLI runs), 10 webhooks per
 *   account (409 `limit_exceeded`), and `201 { webhook }` with the `secret` and `secret_note`
 *   shown once. Every response carries `x-request-id`; errors use `{ error: { code, message, details? } }`.
 * - The pod routes (pod-routes.ts) over pods kept in memory (emulated-pods.ts): the list (paged,
 *   newest first, filtered), actions (emitting `pod.action.queued`; `diagnose` and `logs` write
 *   `last_result` after a delay), the poll route, key minting and chat tickets.
 * - Three buckets, as the spec's Limits: writes (chat tickets, actions, webhook creation), reads
 *   (the list and the poll route) and key mints, each a fixed window from its first request.
 * - Deliveries signed as the spec says, retried on its schedule (scaled), then `disabled_by_us_at`.
 * - `/_emulator/*`: emit events, read webhooks and the delivery log, add and remove pods, read
 *   the queued actions and the bucket counts, inject faults.
 *
 * Where the spec shows no status code (creation, `limit_exceeded`), 201 and 409 are used.
 */
export function createServiceEmulator({
  apiKey,
  allowLocalUrls = false,
  webhookLimit = 10,
  writeLimit = DEFAULT_BUCKET_SIZES.writes.capacity,
  writeWindowMs = DEFAULT_BUCKET_SIZES.writes.windowMs,
  readLimit = DEFAULT_BUCKET_SIZES.reads.capacity,
  readWindowMs = DEFAULT_BUCKET_SIZES.reads.windowMs,
  keyMintLimit = DEFAULT_BUCKET_SIZES.key_mints.capacity,
  keyMintWindowMs = DEFAULT_BUCKET_SIZES.key_mints.windowMs,
  seedPods = 0,
  resultDelayMs,
  wire,
  timeScale = 1,
  deliveryTimeoutMs = 10_000,
  clock = systemClock,
  fetch: fetchFn,
  crypto = createWebSignatureCrypto(),
  logger = silentLogger,
  maxBodyBytes = EMULATOR_MAX_BODY_BYTES,
  onRequest,
  generateSecret = () => `whsec_${bytesToHex(globalThis.crypto.getRandomValues(new Uint8Array(24)))}`,
}: ServiceEmulatorOptions): ServiceEmulator {
  const encoder = new TextEncoder();
  const expectedKey = encoder.encode(apiKey);
  const webhooks: EmulatedWebhook[] = [];
  const faults: Fault[] = [];
  const buckets: Record<BucketName, RequestBucket> = {
    writes: createRequestBucket({ limit: writeLimit, windowMs: writeWindowMs, clock }),
    reads: createRequestBucket({ limit: readLimit, windowMs: readWindowMs, clock }),
    key_mints: createRequestBucket({ limit: keyMintLimit, windowMs: keyMintWindowMs, clock }),
  };
  const pods = createEmulatedPods({ clock, seed: seedPods, resultDelayMs });
  const scheduler = createDeliveryScheduler({ crypto, clock, logger, fetch: fetchFn, timeScale, timeoutMs: deliveryTimeoutMs });

  const publicView = ({ secret: _secret, ...webhook }: EmulatedWebhook): Webhook => webhook;
  const fail = (code: string, status: number, message: string, details?: Record<string, unknown>) =>
    new PodhookError(code, status, message, { details });

  const app = new Hono<{ Variables: { requestId: string } }>();
  app.use(requestId());
  // Every body read within the cap before any route sees it (the unauthenticated /_emulator ones too).
  app.use(async function boundedBody(c, next) {
    c.req.raw = await withBoundedBody(c, (max) => readBodyCapped(c.req.raw, max), maxBodyBytes);
    await next();
  });

  app.use('/pods/v1/*', async function serviceGate(c, next) {
    onRequest?.(c.req.raw.clone());
    const fault = faults[0];
    if (fault) {
      if (--fault.count <= 0) faults.shift();
      throw fail(fault.code ?? 'internal', fault.status ?? 500, fault.message ?? 'Internal error.', fault.details);
    }
    const offered = encoder.encode(c.req.header('x-api-key') ?? '');
    if (!constantTimeEqual(offered, expectedKey)) throw fail('unauthorized', 401, 'Missing or invalid X-API-Key.');
    {
      const taken = buckets[bucketOf(c.req.method, c.req.path)].take();
      if (!taken.ok) {
        c.header('retry-after', String(taken.retryAfterSeconds));
        throw fail('rate_limited', 429, 'Too many requests.', { retry_after_seconds: taken.retryAfterSeconds });
      }
    }
    await next();
  });

  app.post(WEBHOOKS_PATH, async function createWebhook(c) {
    const verdict = validateCreateWebhookBody(await jsonBody(c), { allowLocal: allowLocalUrls });
    if (!verdict.ok) throw fail('invalid_request', 400, verdict.message, verdict.details);
    if (webhooks.length >= webhookLimit) {
      throw fail('limit_exceeded', 409, `This account already has ${webhookLimit} webhooks, the most allowed.`, { limit: webhookLimit });
    }
    const webhook: EmulatedWebhook = {
      id: globalThis.crypto.randomUUID(),
      url: verdict.body.url,
      event_types: verdict.body.event_types ?? null,
      enabled: true,
      disabled_by_us_at: null,
      failure_count: 0,
      last_error: null,
      last_delivery_at: null,
      created_at: new Date(clock()).toISOString(),
      secret: generateSecret(),
    };
    webhooks.push(webhook);
    logger.info({ request_id: c.get('requestId'), webhook_id: webhook.id, url: webhook.url, event_types: webhook.event_types }, 'webhook created');
    return c.json({ webhook: { ...webhook, secret_note: SECRET_NOTE } }, 201);
  });

  app.route(
    '/',
    podRoutes({
      pods,
      wire: { ...DEFAULT_PODS_WIRE, ...wire },
      logger,
      clock,
      emitQueued: (data) => void emit({ type: 'pod.action.queued', data }),
    }),
  );

  app.all('/pods/v1/*', () => {
    throw fail('not_implemented', 501, 'The emulator does not implement this route.');
  });

  function emit({ type, data, id = globalThis.crypto.randomUUID() }: EmitEvent) {
    const body = encoder.encode(JSON.stringify(data ?? defaultPayload(type, { now: clock() })));
    const targets = webhooks.filter(
      (w) => w.enabled && w.disabled_by_us_at === null && (w.event_types == null || w.event_types.includes(type)),
    );
    for (const webhook of targets) scheduler.enqueue(webhook, { id, type, body });
    logger.info({ event_id: id, event_type: type, webhooks: targets.length }, 'event emitted');
    return { id, type, webhook_ids: targets.map((w) => w.id) };
  }

  app.post('/_emulator/events', async function emitEvent(c) {
    const body = (await jsonBody(c)) as Partial<EmitEvent> | null;
    if (typeof body !== 'object' || body === null || typeof body.type !== 'string' || !isEventType(body.type)) {
      throw fail('invalid_request', 400, `type must be one of ${EVENT_TYPES.join(', ')}`, { field: 'type' });
    }
    if (body.id !== undefined && (typeof body.id !== 'string' || !UUID.test(body.id))) {
      throw fail('invalid_request', 400, 'id must be a uuid', { field: 'id' });
    }
    if (body.data !== undefined && (typeof body.data !== 'object' || body.data === null || Array.isArray(body.data))) {
      throw fail('invalid_request', 400, 'data must be a JSON object (the delivered body)', { field: 'data' });
    }
    return c.json({ event: emit({ type: body.type, data: body.data, id: body.id?.toLowerCase() }) }, 202);
  });

  app.get('/_emulator/webhooks', (c) => c.json({ webhooks: webhooks.map(publicView) }));

  app.get('/_emulator/deliveries', (c) => {
    const { event_id: eventId, webhook_id: webhookId, status } = c.req.query();
    const rows = scheduler
      .records()
      .filter((r) => (!eventId || r.event_id === eventId) && (!webhookId || r.webhook_id === webhookId) && (!status || r.status === status));
    return c.json({ deliveries: rows });
  });

  app.get('/_emulator/pods', (c) => c.json({ pods: pods.all() }));
  app.post('/_emulator/pods', async function addPod(c) {
    const body = (await jsonBody(c, { emptyAs: {} })) as Partial<EmulatedPod> | null;
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw fail('invalid_request', 400, 'The body must be a JSON object of pod fields.', { field: 'body' });
    if (body.id !== undefined && (typeof body.id !== 'string' || !UUID.test(body.id) || pods.get(body.id))) {
      throw fail('invalid_request', 400, 'id must be a uuid no pod has.', { field: 'id' });
    }
    if (body.created_at !== undefined && Number.isNaN(Date.parse(String(body.created_at)))) throw fail('invalid_request', 400, 'created_at must be a date-time.', { field: 'created_at' });
    return c.json({ pod: pods.add(body) }, 201);
  });
  app.delete('/_emulator/pods/:id', (c) => {
    if (!pods.remove(c.req.param('id'))) throw fail('not_found', 404, 'Pod not found.');
    return c.body(null, 204);
  });
  app.get('/_emulator/actions', (c) => c.json({ actions: pods.queued() }));
  app.get('/_emulator/buckets', (c) => c.json({ buckets: bucketCounts() }));

  app.post('/_emulator/faults', async function injectFaults(c) {
    const body = (await jsonBody(c)) as Partial<Fault> | null;
    if (typeof body?.count !== 'number' || !Number.isInteger(body.count) || body.count < 1) {
      throw fail('invalid_request', 400, 'count must be a whole number of requests, at least 1', { field: 'count' });
    }
    faults.push({ count: body.count, status: body.status, code: body.code, message: body.message, details: body.details });
    return c.json({ faults }, 201);
  });

  app.notFound((c) => c.json(errorBody('not_found', 'No such route.'), 404));
  app.onError((error, c) => {
    if (error instanceof PodhookError) return c.json(errorBody(error.code, error.message, error.details), error.status as 400);
    logger.error({ request_id: c.get('requestId'), err: (error as Error).message }, 'unhandled error');
    return c.json(errorBody('internal', 'Internal error.'), 500);
  });

  function bucketCounts() {
    return { writes: buckets.writes.counts(), reads: buckets.reads.counts(), key_mints: buckets.key_mints.counts() };
  }

  return {
    app,
    injectFault: (fault) => void faults.push({ ...fault }),
    emit,
    webhooks: () => webhooks.map(publicView),
    deliveries: () => scheduler.records(),
    pods,
    queuedActions: () => pods.queued(),
    bucketCounts,
    close: () => {
      scheduler.close();
      pods.close();
    },
  };
}

/** Which of the spec's buckets a `/pods/v1` request takes from: key minting its own, other writes the write bucket, reads the read bucket. */
function bucketOf(method: string, path: string): BucketName {
  if (method === 'GET' || method === 'HEAD') return 'reads';
  return /^\/pods\/v1\/pods\/[^/]+\/keys\/?$/.test(path) ? 'key_mints' : 'writes';
}
