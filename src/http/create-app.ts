import { Hono } from 'hono';
import { PayloadTooLargeError, PodhookError, UnavailableError } from '../core/errors.js';
import type { IngestOutcome } from '../core/ingest-outcome.js';
import type { Logger } from '../core/logger.js';
import { EVENT_ID_HEADER, EVENT_TYPE_HEADER, type ReceiveDelivery } from '../core/receive-delivery.js';
import { readBodyCapped } from './read-body.js';
import { requestId } from './request-id.js';

export interface ReadinessReport {
  ready: boolean;
  checks: Record<string, 'ok' | string>;
}

export interface AppOptions {
  receive: ReceiveDelivery;
  logger: Logger;
  /** Whether the store answers and a secret is configured (`GET /readyz`). */
  readiness: () => Promise<ReadinessReport>;
  webhookPath?: string;
  maxBodyBytes?: number;
  /** Observes each ingest answer (metrics). */
  onOutcome?: (outcome: IngestOutcome) => void;
  /** Extra routes (e.g. `/metrics`) mounted by the runtime adapter. */
  extend?: (app: Hono<Env>) => void;
}

type Env = { Variables: { requestId: string } };

const UUID_LIKE = /^[0-9a-fA-F-]{36}$/;
export const DEFAULT_WEBHOOK_PATH = '/webhooks';
export const DEFAULT_MAX_BODY_BYTES = 262_144;

/** JSON body in the service's own error shape (spec: Errors). */
export function errorBody(code: string, message: string, details?: Record<string, unknown>) {
  return { error: details ? { code, message, details } : { code, message } };
}

/**
 * The HTTP surface of podhook, the same in every runtime: `POST <webhookPath>` (ingest),
 * `GET /healthz`, `GET /readyz`. The runtime adapter supplies the receiver, store and logger.
 */
export function createApp({
  receive,
  logger,
  readiness,
  webhookPath = DEFAULT_WEBHOOK_PATH,
  maxBodyBytes = DEFAULT_MAX_BODY_BYTES,
  onOutcome,
  extend,
}: AppOptions): Hono<Env> {
  const app = new Hono<Env>();
  app.use(requestId());

  app.post(webhookPath, async function ingest(c) {
    const started = performance.now();
    const requestId = c.get('requestId'); // on every line (a child logger per request costs more)
    const rawId = c.req.header(EVENT_ID_HEADER);
    const eventType = c.req.header(EVENT_TYPE_HEADER)?.slice(0, 100);
    try {
      const body = await readBodyCapped(c.req.raw, maxBodyBytes);
      const result = await receive(c.req.raw.headers, body);
      const outcome = result.duplicate ? 'duplicate' : result.status === 'queued' ? 'accepted' : result.status;
      const latencyMs = performance.now() - started;
      logger.info(
        { request_id: requestId, event_id: result.eventId, event_type: result.eventType, outcome, status: 200, latency_ms: round(latencyMs) },
        'delivery',
      );
      onOutcome?.({ outcome, status: 200, eventType: result.eventType, latencyMs });
      return c.json({ received: true, event_id: result.eventId, duplicate: result.duplicate });
    } catch (error) {
      if (!(error instanceof PodhookError)) throw error;
      const latencyMs = performance.now() - started;
      const line = {
        request_id: requestId,
        // Only header values that passed a shape check are logged; never the body or the signature.
        event_id: rawId && UUID_LIKE.test(rawId) ? rawId.toLowerCase() : undefined,
        event_type: eventType,
        outcome: 'rejected',
        status: error.status,
        reason: error.reason,
        latency_ms: round(latencyMs),
      };
      if (error.status >= 500) logger.error({ ...line, err: describeCause(error) }, 'delivery');
      else if (error.status === 401 || error.status === 409) logger.warn(line, 'delivery');
      else logger.info(line, 'delivery');
      onOutcome?.({ outcome: 'rejected', status: error.status, reason: error.reason, eventType, latencyMs });
      throw error;
    }
  });
  app.all(webhookPath, (c) => {
    c.header('allow', 'POST');
    return c.json(errorBody('method_not_allowed', `Use POST on ${webhookPath}.`), 405);
  });

  app.get('/healthz', (c) => c.json({ status: 'ok' }));
  app.get('/readyz', async (c) => {
    const report = await readiness();
    return c.json({ status: report.ready ? 'ready' : 'not_ready', checks: report.checks }, report.ready ? 200 : 503);
  });

  extend?.(app);

  app.notFound((c) => c.json(errorBody('not_found', 'No such route.'), 404));
  app.onError((error, c) => {
    if (error instanceof PodhookError) {
      if (error instanceof UnavailableError) c.header('retry-after', String(error.retryAfterSeconds));
      // The rest of an oversized body is never read: close the connection rather than reuse it.
      if (error instanceof PayloadTooLargeError) c.header('connection', 'close');
      return c.json(errorBody(error.code, error.message, error.details), error.status as 400);
    }
    logger.error({ request_id: c.get('requestId'), err: describeCause(error) }, 'unhandled error');
    return c.json(errorBody('internal', 'Internal error.'), 500);
  });
  return app;
}

function round(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}

/** Error name, code and message for logs; the chain of causes, never request data. */
function describeCause(error: unknown): Record<string, unknown> {
  const root = error instanceof Error && error.cause !== undefined ? error.cause : error;
  if (root instanceof Error) {
    return { type: root.name, message: root.message, code: (root as { code?: unknown }).code };
  }
  return { message: String(root) };
}
