import { Hono, type Context } from 'hono';
import { PodhookError } from '../core/errors.js';
import { UUID } from '../core/ingest/receive-delivery.js';
import { MAX_KEY_NAME_LENGTH } from '../core/pods/pods-client.js';
import { isPodAction, POD_ACTIONS, type Pod } from '../core/pods/pods-types.js';
import type { PodsWireNames } from '../core/pods/pods-wire.js';
import type { Logger } from '../core/observability/logger.js';
import type { EmulatedPod, EmulatedPods } from './emulated-pods.js';
import { jsonBody } from './json-body.js';

/** When the list route is given no page size (the spec does not show one). */
export const DEFAULT_PAGE_SIZE = 50;

export const KEY_SECRET_NOTE = 'Store this key now: it is shown only once. If it is lost, mint another and revoke the old one.';
export const SHARED_SESSION_NOTE = 'This pod runs one shared conversation: a chat ticket can read earlier turns of it.';

export interface PodRoutesOptions {
  pods: EmulatedPods;
  wire: PodsWireNames;
  logger: Logger;
  clock: () => number;
  /** Emits `pod.action.queued` to the registered webhooks. */
  emitQueued(data: Record<string, unknown>): void;
}

type Env = { Variables: { requestId: string } };

const fail = (code: string, status: number, message: string, details?: Record<string, unknown>) => new PodhookError(code, status, message, { details });
const randomHex = (bytes: number) => Array.from(globalThis.crypto.getRandomValues(new Uint8Array(bytes)), (b) => b.toString(16).padStart(2, '0')).join('');

/**
 * The emulator's pod routes, as the spec describes them (the gate before them checks `X-API-Key`
 * and takes the request's bucket): the list, queueing actions (which emits `pod.action.queued`),
 * the poll route, key minting and chat tickets. Where the spec shows no status, body or name,
 * the choices are the ones docs/pods-client.md lists.
 */
export function podRoutes({ pods, wire, logger, clock, emitQueued }: PodRoutesOptions): Hono<Env> {
  const app = new Hono<Env>();
  const origin = (c: Context) => new URL(c.req.url).origin;
  const listed = (c: Context, pod: EmulatedPod): Pod => ({ ...pod, endpoint: { base_url: `${origin(c)}/pods/${pod.id}/v1` } });
  const podOf = (c: Context): EmulatedPod => {
    const id = c.req.param('id') ?? '';
    const pod = UUID.test(id) ? pods.get(id) : undefined;
    if (!pod) throw fail('not_found', 404, 'Pod not found.');
    return pod;
  };

  app.get('/pods/v1/pods', function listPods(c) {
    const sizeText = c.req.query(wire.pageSizeParam);
    const pageSize = sizeText === undefined ? DEFAULT_PAGE_SIZE : Number(sizeText);
    if (!/^\d+$/.test(sizeText ?? '1') || !Number.isInteger(pageSize) || pageSize < 1 || pageSize > 100) {
      throw fail('invalid_request', 400, 'The page size must be a whole number from 1 to 100.', { field: wire.pageSizeParam });
    }
    const cursor = c.req.query(wire.cursorParam) || undefined;
    const page = pods.page({ pageSize, cursor, externalRef: c.req.query(wire.externalRefParam) });
    return c.json({ pods: page.pods.map((p) => listed(c, p)), next_cursor: page.next_cursor });
  });

  app.post('/pods/v1/pods/:id/actions', async function queueAction(c) {
    const pod = podOf(c);
    const body = (await jsonBody(c)) as Record<string, unknown> | null;
    const action = typeof body === 'object' && body !== null ? body[wire.actionProperty] : undefined;
    if (!isPodAction(action)) {
      throw fail('invalid_request', 400, `The body must name one action: ${POD_ACTIONS.join(', ')}.`, { field: wire.actionProperty, allowed: [...POD_ACTIONS] });
    }
    const queued = pods.queue(pod.id, action, c.get('requestId'));
    logger.info({ request_id: c.get('requestId'), pod_id: pod.id, action }, 'action queued');
    emitQueued({ pod: listed(c, pod), action: queued });
    return c.json({ action: queued }, 202);
  });

  app.get('/pods/v1/pods/:id/actions', function pollActions(c) {
    return c.json(pods.poll(podOf(c).id));
  });

  app.post('/pods/v1/pods/:id/keys', async function mintKey(c) {
    const pod = podOf(c);
    const body = await jsonBody(c, { emptyAs: {} });
    const name = (body as { name?: unknown } | null)?.name ?? 'API key';
    if (typeof name !== 'string' || name.length === 0 || [...name].length > MAX_KEY_NAME_LENGTH) {
      throw fail('invalid_request', 400, `name must be a string of 1 to ${MAX_KEY_NAME_LENGTH} characters.`, { field: 'name', max_length: MAX_KEY_NAME_LENGTH });
    }
    const secret = `pk_${randomHex(24)}`;
    const key = {
      id: globalThis.crypto.randomUUID(),
      name,
      secret,
      secret_note: KEY_SECRET_NOTE,
      prefix: secret.slice(0, 7),
      last4: secret.slice(-4),
      daily_request_cap: 1000,
      created_at: new Date(clock()).toISOString(),
    };
    logger.info({ request_id: c.get('requestId'), pod_id: pod.id, key_id: key.id }, 'pod endpoint key minted');
    return c.json({ key, endpoint: { base_url: `${origin(c)}/pods/${pod.id}/v1`, model: 'agent-pod' } }, 201);
  });

  app.post('/pods/v1/pods/:id/chat-ticket', function chatTicket(c) {
    const pod = podOf(c);
    const ticket = `ct_${randomHex(16)}`;
    const ws = new URL(`/pods/${pod.id}/chat`, origin(c).replace(/^http/, 'ws'));
    ws.searchParams.set('ticket', ticket);
    return c.json({ chat: { ticket, expires_in_seconds: 60, scope: 'chat', shared_session: SHARED_SESSION_NOTE, websocket_url: ws.href } });
  });

  return app;
}
