import { Hono } from 'hono';
import { z } from 'zod';
import { backfillJson } from '../../core/backfill/progress.js';
import { backfillPlanJson, planBackfill, startBackfill, type BackfillRequest } from '../../core/backfill/start-backfill.js';
import { parseTimeOrDuration, TIME_OR_DURATION_HINT } from '../../core/steps/time-or-duration.js';
import { DELIVERY_STATUSES } from '../../core/delivery.js';
import { InvalidRequestError, PodhookError } from '../../core/errors.js';
import { PodsError, PodsRateLimited } from '../../core/pods/pods-error.js';
import { exportLine, toExportRecord } from '../../core/transfer/delivery-export.js';
import { deliveryRows } from '../../core/transfer/delivery-rows.js';
import { errorBody } from '../ingest.js';
import { readOrderWaits, waitingOnOf } from '../../core/order/waiting-on.js';
import type { AdminContext } from './admin-context.js';
import type { AdminEnv } from './admin-env.js';
import {
  readRuns,
  encodeCursor,
  sinceTime,
  MAX_DURATION_SAMPLES,
  pageOf,
  parseExportQuery,
  parseListQuery,
  parseStatsQuery,
  statsAnswer,
} from './admin-queries.js';

/** `fresh: true`: the handlers replayed run from the start (their recorded durable steps dropped). */
const ReplaySchema = z.union([
  z.strictObject({ event_ids: z.array(z.guid()).min(1).max(1000), handler: z.string().optional(), fresh: z.boolean().optional() }),
  z
    .strictObject({
      status: z.enum(DELIVERY_STATUSES).optional(),
      type: z.string().max(200).optional(),
      since: sinceTime.optional(),
      handler: z.string().optional(),
      fresh: z.boolean().optional(),
    })
    .refine((f) => f.status !== undefined || f.type !== undefined || f.since !== undefined, 'name event_ids, or at least one of status, type, since'),
]);

const BackfillSchema = z.union([
  z.strictObject({ cancel: z.string().max(100) }),
  z.strictObject({
    handler: z.string().max(200),
    since: z.string().max(100).optional(),
    until: z.string().max(100).optional(),
    type: z.string().max(200).optional(),
    rate: z.number().optional(),
    dry_run: z.boolean().optional(),
  }),
]);

/**
 * The body as JSON, whatever its content type (`curl -d` sends a form type): a body that is not
 * JSON is a 400 that says what to send.
 */
async function jsonBody(c: { req: { json(): Promise<unknown> } }, code: string): Promise<unknown> {
  try {
    return await c.req.json();
  } catch {
    throw new InvalidRequestError(`body: must be a JSON object (curl: -H 'content-type: application/json' -d '{...}')`, code);
  }
}

/** Refuses a cookie-authenticated POST without the session's CSRF header (bearer requests need none). */
async function refuseWithoutCsrf(ctx: AdminContext, c: Parameters<AdminContext['auth']['checkCsrf']>[0]) {
  if (await ctx.auth.checkCsrf(c, c.req.header('x-podhook-csrf'))) return null;
  return c.json(errorBody('forbidden', 'A browser session must send the x-podhook-csrf header; scripts use the bearer token.'), 403);
}

/** `/_podhook/api/*`: JSON for scripts and `podhook listen`. Mounted behind the admin auth. */
export function createAdminApi(ctx: AdminContext): Hono<AdminEnv> {
  const { store, router, clock } = ctx;
  const api = new Hono<AdminEnv>();

  api.get('/deliveries', async (c) => {
    const { rows, next } = await pageOf(store, parseListQuery(c.req.query()));
    return c.json({ deliveries: await deliveryRows(store, rows), next_cursor: next });
  });

  api.get('/deliveries/:event_id', async (c) => {
    const d = await store.get(c.req.param('event_id'));
    if (!d) return c.json(errorBody('not_found', 'No delivery has this event id.'), 404);
    const waits = (await readOrderWaits(store, [d])).get(d.eventId) ?? [];
    return c.json({
      ...toExportRecord(d),
      runs: await readRuns(store, d, router),
      waiting_on: waitingOnOf(waits),
      order: waits.map((w) => ({ handler: w.handler, key: w.key, waiting_on: w.waitingOn })),
    });
  });

  api.get('/export', async (c) => {
    const { scan, waitSeconds, cursor } = parseExportQuery(c.req.query());
    const deadline = clock() + Math.min(waitSeconds * 1000, ctx.maxWaitMs);
    // Rows received in the last settleMs are held back: a follower's cursor must never pass a
    // delivery that commits later with an earlier received time (concurrent Worker isolates).
    const read = () => store.scan(ctx.settleMs > 0 ? { ...scan, before: clock() - ctx.settleMs } : scan);
    let rows = await read();
    // Long poll: nothing newer yet, so look again every pollMs until the wait is over.
    while (rows.length === 0 && clock() < deadline && !c.req.raw.signal.aborted) {
      await ctx.sleep(Math.min(ctx.pollMs, deadline - clock()));
      rows = await read();
    }
    const next = rows.length > 0 ? encodeCursor(rows.at(-1)!) : cursor;
    const headers: Record<string, string> = { 'content-type': 'application/x-ndjson; charset=utf-8', 'cache-control': 'no-store' };
    if (next) headers['x-podhook-next-cursor'] = next;
    return c.body(rows.map(exportLine).join(''), 200, headers);
  });

  api.post('/replay', async (c) => {
    const refused = await refuseWithoutCsrf(ctx, c);
    if (refused) return refused;
    const parsed = ReplaySchema.safeParse(await jsonBody(c, 'invalid_replay'));
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new InvalidRequestError(`${issue.path.join('.') || 'body'}: ${issue.message}`, 'invalid_replay');
    }
    const body = parsed.data;
    if (body.handler !== undefined && !router.handlers.some((h) => h.name === body.handler)) {
      throw new InvalidRequestError(`handler: no handler is named ${JSON.stringify(body.handler)}`, 'invalid_replay');
    }
    const options = { handler: body.handler, fresh: body.fresh === true };
    const replayed = 'event_ids' in body
      ? await ctx.replay(body.event_ids, options)
      : await ctx.replayMatching({ status: body.status, eventType: body.type, since: body.since }, options);
    return c.json({ replayed });
  });

  api.get('/backfills', async (c) => {
    const now = clock();
    return c.json({ backfills: (await store.listBackfills({ limit: 50 })).map((b) => backfillJson(b, now)) });
  });

  api.post('/backfills', async (c) => {
    const refused = await refuseWithoutCsrf(ctx, c);
    if (refused) return refused;
    const parsed = BackfillSchema.safeParse(await jsonBody(c, 'invalid_backfill'));
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new InvalidRequestError(`${issue.path.join('.') || 'body'}: ${issue.message}`, 'invalid_backfill');
    }
    const body = parsed.data;
    if ('cancel' in body) {
      const cancelled = await store.cancelBackfill(body.cancel, clock());
      if (!cancelled) return c.json(errorBody('not_found', 'No running backfill has this id.'), 404);
      return c.json({ backfill: backfillJson(cancelled, clock()) });
    }
    const now = clock();
    const when = (field: string, text: string | undefined) => {
      if (text === undefined) return undefined;
      const at = parseTimeOrDuration(text, now);
      if (at === null) throw new InvalidRequestError(`${field}: must be ${TIME_OR_DURATION_HINT}`, 'invalid_backfill');
      return at;
    };
    const request: BackfillRequest = { handler: body.handler, since: when('since', body.since), until: when('until', body.until), type: body.type, rate: body.rate };
    if (body.dry_run) {
      return c.json({ dry_run: true, ...backfillPlanJson(await planBackfill(store, router.handlers, request, now)) });
    }
    const { backfill } = await startBackfill(store, router.handlers, request, now);
    ctx.backfillStarted();
    return c.json({ backfill: backfillJson(backfill, clock()) }, 201);
  });

  api.get('/stats', async (c) => {
    const { hours } = parseStatsQuery(c.req.query());
    const now = clock();
    const stats = await store.deliveryStats({ since: now - hours * 3_600_000, maxSamples: MAX_DURATION_SAMPLES });
    return c.json(statsAnswer(stats, router, { now, hours, downtime: await ctx.lastDowntime() }));
  });

  api.get('/pods', async (c) => {
    const drift = c.req.query('drift');
    if (drift !== undefined && !['true', 'false', '1', '0'].includes(drift)) throw new InvalidRequestError('drift must be true or false', 'invalid_query', { field: 'drift' });
    if (!ctx.podsReport) throw new PodhookError('not_configured', 503, 'The pods report is not available in this receiver.');
    try {
      return c.json(await ctx.podsReport({ driftOnly: drift === 'true' || drift === '1' }));
    } catch (error) {
      throw serviceFailure(error);
    }
  });

  return api;
}

/**
 * A failed call to the service, as the admin API answers it: not as the service's own status (its
 * 401 is about the API key, not the admin token), but 429 with when to try again, or 502 with the
 * service's code and request id.
 */
function serviceFailure(error: unknown): unknown {
  if (error instanceof PodsRateLimited) {
    return new PodhookError('rate_limited', 429, `The account's ${error.bucket} bucket has no token before ${new Date(error.retryAt).toISOString()}.`, {
      details: { bucket: error.bucket, retry_at: new Date(error.retryAt).toISOString(), request_id: error.requestId },
    });
  }
  if (error instanceof PodsError) {
    return new PodhookError('service_error', 502, `The service failed the pods report (${error.code}): ${error.message}`, {
      details: { service_code: error.code, service_status: error.status, request_id: error.requestId },
    });
  }
  return error;
}
