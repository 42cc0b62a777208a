import { Hono, type Context } from 'hono';
import { PodhookError } from '../core/errors.js';
import type { Logger } from '../core/observability/logger.js';
import { describeCause, errorAnswer, errorBody, INTERNAL_ERROR_ANSWER, type IngestHandler } from './ingest.js';
import { readBodyCapped } from './read-body.js';
import { requestId } from './request-id.js';
import type { AdminEnv } from './admin/admin-env.js';

export { errorBody } from './ingest.js';

export interface ReadinessReport {
  ready: boolean;
  checks: Record<string, 'ok' | string>;
}

export interface AppOptions {
  /** `POST <webhookPath>` (see `createIngestHandler`). */
  ingest: IngestHandler;
  logger: Logger;
  /** Whether the store answers and a secret is configured (`GET /readyz`). */
  readiness: () => Promise<ReadinessReport>;
  webhookPath?: string;
  /** Extra routes (e.g. `/metrics`) mounted by the runtime adapter. */
  extend?: (app: Hono<Env>) => void;
  /**
   * Builds the admin API and inspector (`createAdmin`), served at `/_podhook/` when ADMIN_TOKEN is
   * set (otherwise those routes are 404). Built on the first `/_podhook` request, not before: the
   * Worker builds the app per request, and ingest must not pay for routes it never uses.
   */
  admin?: () => Hono<AdminEnv>;
}

type Env = { Variables: { requestId: string } };

export const DEFAULT_WEBHOOK_PATH = '/webhooks';
export const DEFAULT_MAX_BODY_BYTES = 262_144;

/**
 * The HTTP surface of podhook, the same in every runtime: `POST <webhookPath>` (ingest),
 * `GET /healthz`, `GET /readyz`. The runtime adapter supplies the receiver, store and logger.
 */
export function createApp({ ingest, logger, readiness, webhookPath = DEFAULT_WEBHOOK_PATH, extend, admin }: AppOptions): Hono<Env> {
  const app = new Hono<Env>();
  app.use(requestId());

  app.post(webhookPath, async (c) => {
    const answer = await ingest({
      headers: c.req.raw.headers,
      requestId: c.get('requestId'),
      readBody: (max) => readBodyCapped(c.req.raw, max),
    });
    return c.json(answer.body, answer.status as 200, answer.headers);
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
  if (admin) {
    let built: Hono<AdminEnv> | undefined;
    const forward = (c: Context<Env>) => (built ??= admin()).fetch(c.req.raw, { requestId: c.get('requestId') });
    app.all('/_podhook', forward);
    app.all('/_podhook/*', forward);
  }

  app.notFound((c) => c.json(errorBody('not_found', 'No such route.'), 404));
  app.onError((error, c) => {
    if (error instanceof PodhookError) {
      const answer = errorAnswer(error);
      return c.json(answer.body, answer.status as 400, answer.headers);
    }
    logger.error({ request_id: c.get('requestId'), err: describeCause(error) }, 'unhandled error');
    return c.json(INTERNAL_ERROR_ANSWER.body, 500);
  });
  return app;
}
