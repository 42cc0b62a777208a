import { Hono, type Context } from 'hono';
import { HTTPException } from 'hono/http-exception';
import { PayloadTooLargeError, PodhookError } from '../core/errors.js';
import type { HeaderSource } from '../core/ingest/receive-delivery.js';
import type { Logger } from '../core/observability/logger.js';
import { describeCause, errorAnswer, errorBody, INTERNAL_ERROR_ANSWER, type IngestHandler, type JsonAnswer } from './ingest.js';
import { adminBodyCap, withBoundedBody } from './bounded-request.js';
import { checkDeclaredLength, readBodyCapped } from './read-body.js';
import { REQUEST_ID_HEADER, requestId } from './request-id.js';
import type { AdminEnv } from './admin/admin-env.js';

export { errorBody } from './ingest.js';

export interface ReadinessReport {
  ready: boolean;
  checks: Record<string, 'ok' | string>;
}

/** The variables podhook sets on every request's context (`c.get('requestId')`). */
export type AppEnv = { Variables: { requestId: string } };

/** podhook's Hono app, as `customize` and `extend` receive it. */
export type PodhookApp = Hono<AppEnv>;

/** Where the ingest route reads one request from: its headers and its raw body, capped. */
export interface IngestSource {
  headers: HeaderSource;
  readBody(maxBytes: number): Promise<Uint8Array>;
}

export interface AppOptions {
  /** `POST <webhookPath>` (see `createIngestHandler`). */
  ingest: IngestHandler;
  logger: Logger;
  /** Whether the store answers and a secret is configured (`GET /readyz`). */
  readiness: () => Promise<ReadinessReport>;
  webhookPath?: string;
  /**
   * How podhook's routes read a request's body (ingest, and the admin surface's forms and JSON).
   * The default reads the Web `Request`; the Node server reads Node's own request
   * (`c.env.incoming`), which skips building Web streams, inside its body budget.
   */
  ingestSource?: (c: Context<AppEnv>) => IngestSource;
  /**
   * The team's own middleware and routes (src/app.ts), added before podhook's routes so that
   * middleware also wraps ingest.
   */
  customize?: (app: PodhookApp) => void;
  /** Extra routes (e.g. `/metrics`) mounted by the runtime adapter. */
  extend?: (app: PodhookApp) => void;
  /**
   * Builds the admin API and inspector (`createAdmin`), served at `/_podhook/` when ADMIN_TOKEN is
   * set (otherwise those routes are 404). Built on the first `/_podhook` request, not before:
   * ingest must not pay for routes it never uses.
   */
  admin?: () => Hono<AdminEnv>;
}

export const DEFAULT_WEBHOOK_PATH = '/webhooks';
export const DEFAULT_MAX_BODY_BYTES = 262_144;

/**
 * The HTTP surface of podhook, the same in every runtime: `POST <webhookPath>` (ingest),
 * `GET /healthz`, `GET /readyz`, and whatever the team adds. The runtime adapter supplies the
 * receiver, store, logger and how a request is read.
 */
export function createApp({
  ingest,
  logger,
  readiness,
  webhookPath = DEFAULT_WEBHOOK_PATH,
  ingestSource = webIngestSource,
  customize,
  extend,
  admin,
}: AppOptions): PodhookApp {
  const app = new Hono<AppEnv>();
  app.use(requestId({ answered: (res) => answeredWithId.has(res) }));
  customize?.(app);

  app.post(webhookPath, async (c) => {
    const id = c.get('requestId');
    const source = ingestSource(c);
    return jsonResponse(await ingest({ headers: source.headers, requestId: id, readBody: source.readBody }), id);
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
    // Every body under /_podhook/ is read here, capped and inside the body budget, before the
    // admin auth: the login form is reachable without a credential.
    const forward = async (c: Context<AppEnv>) => {
      const request = await withBoundedBody(c, (max) => ingestSource(c).readBody(max), adminBodyCap(c.req.path));
      return (built ??= admin()).fetch(request, { requestId: c.get('requestId') });
    };
    app.all('/_podhook', forward);
    app.all('/_podhook/*', forward);
  }

  app.notFound((c) => c.json(errorBody('not_found', 'No such route.'), 404));
  app.onError((error, c) => {
    // Hono's own middleware (bearer-auth on /metrics, a team's) answers by throwing one.
    if (error instanceof HTTPException) return error.getResponse();
    if (error instanceof PodhookError) {
      const answer = errorAnswer(error);
      return c.json(answer.body, answer.status as 400, answer.headers);
    }
    logger.error({ request_id: c.get('requestId'), err: describeCause(error) }, 'unhandled error');
    return c.json(INTERNAL_ERROR_ANSWER.body, 500);
  });
  return app;
}

/** The Web `Request` as the ingest route's source (the Worker; `app.request` in tests). */
export function webIngestSource(c: Context): IngestSource {
  const raw = c.req.raw;
  if (raw.bodyUsed) return bodyReadByMiddleware(c);
  return { headers: raw.headers, readBody: (max) => readBodyCapped(raw, max) };
}

/**
 * The source when a team middleware already read the body: Hono's body cache has it (the same
 * bytes for `c.req.arrayBuffer()`), under the same cap.
 */
export function bodyReadByMiddleware(c: Context): IngestSource {
  const headers = c.req.raw.headers;
  return {
    headers,
    async readBody(max) {
      checkDeclaredLength(headers.get('content-length'), headers.has('transfer-encoding'), max);
      const body = new Uint8Array(await c.req.arrayBuffer());
      if (body.byteLength > max) throw new PayloadTooLargeError(max);
      return body;
    },
  };
}

/** Responses that already carry the request id: the middleware need not rebuild their headers. */
const answeredWithId = new WeakSet<Response>();

/**
 * The ingest answer with plain-object headers: on Node, @hono/node-server writes such a
 * response straight to the socket without building a `Headers` object.
 */
function jsonResponse(answer: JsonAnswer, id: string): Response {
  const response = new Response(JSON.stringify(answer.body), {
    status: answer.status,
    headers: { 'content-type': 'application/json', [REQUEST_ID_HEADER]: id, ...answer.headers },
  });
  answeredWithId.add(response);
  return response;
}
