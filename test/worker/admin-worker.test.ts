// The admin API in workerd on D1: the same Hono routes as on Node, and the same refusals.
import { createExecutionContext, waitOnExecutionContext } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { defineHandler } from '../../src/core/events/define-handler.js';
import { createWorker } from '../../src/worker/create-worker.js';
import { createD1Store } from '../../src/store/d1/d1-store.js';
import { signDelivery, toRequest } from '../helpers/sign.js';
import { emptyD1 } from './worker-target.js';

const TOKEN = 'worker-admin-token-0123456789abcdef';
let broken = false;
const handlers = [
  defineHandler('pod.created', { name: 'created' }, async () => {}),
  defineHandler('pod.backup.failed', { name: 'backups' }, async () => {
    if (broken) throw new Error('backups is broken');
  }),
];
let clockOffsetMs = 0;
const worker = createWorker({ handlers, clock: () => Date.now() + clockOffsetMs, admin: { failureDelay: { baseMs: 1, maxMs: 2 } } });
const withToken = { ...env, ADMIN_TOKEN: TOKEN, DISPATCH_MAX_ATTEMPTS: '1' };

async function call(path: string, init: RequestInit = {}, bindings: typeof env = withToken, token: string | null = TOKEN) {
  const ctx = createExecutionContext();
  const headers = new Headers(init.headers);
  if (token) headers.set('authorization', `Bearer ${token}`);
  const res = await worker.fetch!(new Request(`http://podhook.test${path}`, { ...init, headers }) as Request<unknown, IncomingRequestCfProperties>, bindings, ctx);
  await waitOnExecutionContext(ctx);
  return res;
}
async function deliver(eventType: string) {
  const d = signDelivery({ t: Math.floor(Date.now() / 1000), eventType });
  const ctx = createExecutionContext();
  expect((await worker.fetch!(toRequest(d) as Request<unknown, IncomingRequestCfProperties>, withToken, ctx)).status).toBe(200);
  await waitOnExecutionContext(ctx);
  return d;
}

describe('admin API (Worker)', () => {
  beforeEach(async () => {
    broken = false;
    clockOffsetMs = 0;
    await emptyD1(env.DB);
  });
  afterEach(() => vi.restoreAllMocks());

  it('lists, shows one delivery with its runs, exports at once, counts stats, and replays a dead letter', async () => {
    const ok = await deliver('pod.created');
    broken = true;
    const dead = await deliver('pod.backup.failed');
    const store = createD1Store(env.DB);
    expect((await store.get(dead.eventId))?.status).toBe('dead');

    const list = (await (await call('/_podhook/api/deliveries?limit=1')).json()) as { deliveries: { event_id: string }[]; next_cursor: string };
    expect(list.deliveries.map((d) => d.event_id)).toEqual([dead.eventId]);
    const next = (await (await call(`/_podhook/api/deliveries?limit=1&cursor=${encodeURIComponent(list.next_cursor)}`)).json()) as typeof list;
    expect(next).toEqual({ deliveries: [expect.objectContaining({ event_id: ok.eventId })], next_cursor: null });

    const one = (await (await call(`/_podhook/api/deliveries/${dead.eventId}`)).json()) as { format: string; runs: Record<string, unknown>[] };
    expect(one.format).toBe('podhook.delivery.v1');
    expect(one.runs).toMatchObject([{ handler: 'backups', attempt: 1, outcome: 'failed', error: 'Error: backups is broken' }]);

    // Deliveries younger than 5 s are held back (isolates may commit out of received order), and
    // the Worker does not hold a long poll: wait= answers at once with what is there.
    const young = await call('/_podhook/api/export?wait=25');
    expect(await young.text()).toBe('');
    expect(young.headers.get('x-podhook-next-cursor')).toBeNull();
    clockOffsetMs = 6_000;
    const exported = await call('/_podhook/api/export?wait=25');
    expect((await exported.text()).trim().split('\n').map((l) => JSON.parse(l).event_id)).toEqual([ok.eventId, dead.eventId]);
    expect(exported.headers.get('x-podhook-next-cursor')).toMatch(/^\d+\./);

    const stats = (await (await call('/_podhook/api/stats')).json()) as { dead_letters: number; handlers: { handler: string; runs: number; failures: number }[] };
    expect(stats.dead_letters).toBe(1);
    expect(stats.handlers).toEqual(expect.arrayContaining([expect.objectContaining({ handler: 'backups', runs: 1, failures: 1 })]));

    broken = false;
    const replay = await call('/_podhook/api/replay', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ status: 'dead' }) });
    expect(await replay.json()).toEqual({ replayed: 1 });
    // The dispatcher ran it under waitUntil, after the answer.
    expect(await store.get(dead.eventId)).toMatchObject({ status: 'processed', attempts: 2 });
  });

  it('refuses without the token or with a wrong one (401, nothing revealed, no token logged), and is 404 when unset', async () => {
    const d = await deliver('pod.created');
    const warn = vi.spyOn(console, 'warn');
    for (const token of [null, 'w'.repeat(40)]) {
      const res = await call('/_podhook/api/deliveries', {}, withToken, token);
      expect(res.status).toBe(401);
      const text = await res.text();
      expect(JSON.parse(text).error.code).toBe('unauthorized');
      expect(text).not.toContain(d.eventId);
    }
    const lines = warn.mock.calls.map(([l]) => String(l));
    expect(lines.some((l) => l.includes('admin authentication failed'))).toBe(true);
    expect(lines.join('\n')).not.toContain(TOKEN);
    expect(lines.join('\n')).not.toContain('w'.repeat(40));
    for (const path of ['/_podhook/', '/_podhook/api/deliveries', '/_podhook/login']) {
      expect((await call(path, {}, env)).status).toBe(404);
    }
  });

  it('refuses a cookie session POST without its CSRF field, and a short ADMIN_TOKEN stops the Worker (503)', async () => {
    const d = await deliver('pod.created');
    const login = await call(
      '/_podhook/login',
      { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'http://podhook.test' }, body: `token=${TOKEN}`, redirect: 'manual' },
      withToken,
      null,
    );
    expect(login.status).toBe(303);
    const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
    expect(cookie).not.toContain(TOKEN);
    const form = { 'content-type': 'application/x-www-form-urlencoded', origin: 'http://podhook.test', cookie };
    expect((await call(`/_podhook/deliveries/${d.eventId}/redeliver`, { method: 'POST', headers: form, body: '' }, withToken, null)).status).toBe(403);
    const page = await (await call(`/_podhook/deliveries/${d.eventId}`, { headers: { cookie } }, withToken, null)).text();
    const csrf = /name="csrf" value="([0-9a-f]{64})"/.exec(page)![1]!;
    const ok = await call(`/_podhook/deliveries/${d.eventId}/redeliver`, { method: 'POST', headers: form, body: `csrf=${csrf}`, redirect: 'manual' }, withToken, null);
    expect(ok.status).toBe(303);
    expect(ok.headers.get('location')).toContain('redelivered=1');

    const error = vi.spyOn(console, 'error');
    const short = await call('/_podhook/api/deliveries', {}, { ...env, ADMIN_TOKEN: 'too-short' }, 'too-short');
    expect(short.status).toBe(503);
    expect(error.mock.calls.map(([l]) => String(l)).join('\n')).toMatch(/ADMIN_TOKEN must be at least 32 characters/);
    expect(error.mock.calls.map(([l]) => String(l)).join('\n')).not.toContain('too-short');
  });

  it('serves the pods report from D1: 503 not_configured without SVC_BASE_URL; with one, the stored key and a read token taken before the call', async () => {
    const unconfigured = await call('/_podhook/api/pods');
    expect(unconfigured.status).toBe(503);
    expect(((await unconfigured.json()) as { error: { code: string } }).error.code).toBe('not_configured');
    const store = createD1Store(env.DB);
    await store.putApiKey({ account: 'default', secret: 'svc_worker_stored_key', fingerprint: 'abcdefabcdef', createdAt: Date.now() });
    // Nothing listens on port 9: the call is made (with the stored key) and fails as network_error.
    const res = await call('/_podhook/api/pods', {}, { ...withToken, SVC_BASE_URL: 'http://127.0.0.1:9' });
    expect(res.status).toBe(502);
    const text = await res.text();
    expect(JSON.parse(text)).toMatchObject({ error: { code: 'service_error', details: { service_code: 'network_error' } } });
    expect(text).not.toContain('svc_worker_stored_key');
    const { results } = await env.DB.prepare("select count(*) as n from rate_tokens where bucket = 'reads'").all<{ n: number }>();
    expect(results[0]!.n).toBe(240);
  });
});
