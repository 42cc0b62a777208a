// The admin API on a real Node server on 127.0.0.1 (real SQLite file, dispatcher on), with the
// recording fixture handlers: every answer, and every way it refuses.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { parseConfig } from '../../../src/core/config.js';
import { ConfigError } from '../../../src/core/errors.js';
import { startServer, type RunningServer } from '../../../src/node/serve.js';
import { failHandler, handlers, recordedCalls, resetRecording } from '../../fixtures/recording-handlers.js';
import { historyDeliveries } from '../../helpers/seed-history.js';
import { captureLogger } from '../../helpers/capture-logger.js';
import { signDelivery, TEST_SECRET } from '../../helpers/sign.js';
import { runCli } from '../../helpers/spawn-podhook.js';
import { startAdminServer } from './admin-server.js';
import { dbIn, useTempDir } from '../../helpers/temp-dir.js';

const TOKEN = 'adm_0123456789abcdef0123456789abcdef';
const tempDir = useTempDir();
const nowS = () => Math.floor(Date.now() / 1000);

let server: RunningServer;
let log: ReturnType<typeof captureLogger>;
const delays: number[] = [];

async function start() {
  log = captureLogger();
  return startAdminServer(tempDir(), {
    token: TOKEN,
    logger: log.logger,
    admin: { failureDelay: { baseMs: 100, maxMs: 800 }, sleep: (ms) => (delays.push(ms), new Promise((r) => setTimeout(r, 5))), pollMs: 20 },
  });
}

const api = (path: string, init: RequestInit = {}, token: string | null = TOKEN) =>
  fetch(`${server.url}/_podhook/api${path}`, {
    ...init,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(init.headers as Record<string, string>) },
  });
const deliver = async (eventType = 'pod.created', body?: object) => {
  const d = signDelivery({ t: nowS(), eventType, body });
  const res = await fetch(`${server.url}/webhooks`, { method: 'POST', headers: d.headers, body: d.body });
  expect(res.status).toBe(200);
  return d;
};
const statusOf = async (id: string) => (await server.runtime.store.get(id))?.status;

describe('admin API (Node)', () => {
  beforeEach(async () => {
    resetRecording();
    delays.length = 0;
    server = await start();
  });
  afterEach(async () => {
    await server.close(100);
  });

  it('lists deliveries newest first as `podhook deliveries --json` rows, paged by a keyset cursor', async () => {
    const sent: Awaited<ReturnType<typeof deliver>>[] = [];
    for (let i = 0; i < 5; i++) sent.push(await deliver());
    await vi.waitFor(async () => expect(await (async () => (await statusOf(sent[4]!.eventId)) === 'processed')(), 'processed').toBe(true), { timeout: 5000 });
    const first = (await (await api('/deliveries?limit=2')).json()) as { deliveries: { event_id: string }[]; next_cursor: string | null };
    expect(first.deliveries).toHaveLength(2);
    expect(Object.keys(first.deliveries[0]!)).toEqual([
      'event_id', 'event_type', 'status', 'attempts', 'delivery_count', 'received_at', 'last_received_at', 'last_error', 'signature_t',
      'next_attempt_at', 'processed_at', 'body_bytes', 'conflict_with', 'waiting_on', 'drift', 'parked',
    ]);
    const seen = [...first.deliveries];
    let cursor = first.next_cursor;
    while (cursor) {
      const page = (await (await api(`/deliveries?limit=2&cursor=${encodeURIComponent(cursor)}`)).json()) as typeof first;
      seen.push(...page.deliveries);
      cursor = page.next_cursor;
    }
    const stored = await server.runtime.store.list({ limit: 10 });
    expect(seen.map((d) => d.event_id)).toEqual(stored.map((d) => d.eventId));
    const asc = (await (await api('/deliveries?order=asc&limit=10&status=processed&type=pod.created')).json()) as typeof first;
    expect(asc.deliveries.map((d) => d.event_id)).toEqual(stored.map((d) => d.eventId).reverse());
    expect(asc.next_cursor).toBeNull();
    const bad = await api('/deliveries?status=nope');
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { code: string } }).error.code).toBe('invalid_request');
  });

  it('answers one delivery as a podhook.delivery.v1 record with its body and every handler run', async () => {
    failHandler('recordBackups');
    const d = await deliver('pod.backup.failed', { pod: { id: 'p1' }, note: 'é' });
    await vi.waitFor(async () => expect(await (async () => (await statusOf(d.eventId)) === 'dead')(), 'dead').toBe(true), { timeout: 5000 });
    const res = await api(`/deliveries/${d.eventId}`);
    expect(res.status).toBe(200);
    const record = (await res.json()) as Record<string, unknown> & { runs: Record<string, unknown>[]; body_base64: string };
    expect(record).toMatchObject({ format: 'podhook.delivery.v1', event_id: d.eventId, event_type: 'pod.backup.failed', status: 'dead' });
    expect(Buffer.from(record.body_base64, 'base64').equals(Buffer.from(d.body))).toBe(true);
    const runs = [...record.runs].sort((a, b) => String(a.handler).localeCompare(String(b.handler)));
    expect(runs).toMatchObject([
      { handler: 'recordAll', attempt: 1, outcome: 'succeeded', error: null },
      { handler: 'recordBackups', attempt: 1, outcome: 'failed', error: 'Error: recordBackups is broken' },
    ]);
    for (const r of runs) {
      expect(typeof r.duration_ms).toBe('number');
      expect(Date.parse(String(r.at))).toBeGreaterThan(0);
      expect(r.replica).toMatch(/pid\d+/);
    }
    // Processed at the first attempt: no ledger rows, one run per handler of the type.
    const ok = await deliver('pod.created');
    await vi.waitFor(async () => expect(await (async () => (await statusOf(ok.eventId)) === 'processed')(), 'processed').toBe(true), { timeout: 5000 });
    const okRecord = (await (await api(`/deliveries/${ok.eventId}`)).json()) as { runs: Record<string, unknown>[] };
    expect(okRecord.runs).toMatchObject([{ handler: 'recordAll', attempt: 1, outcome: 'succeeded', error: null }]);
    expect(typeof okRecord.runs[0]!.duration_ms).toBe('number');
    expect(okRecord.runs[0]!.replica).toBe(runs[0]!.replica);
    expect((await api('/deliveries/00000000-0000-4000-8000-000000000000')).status).toBe(404);
    // An unknown admin route answers the JSON 404, once authenticated (401 before).
    const unknown = await api('/nothing-here');
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: { code: string } }).error.code).toBe('not_found');
    expect((await api('/nothing-here', {}, null)).status).toBe(401);
  });

  it('exports JSON Lines oldest first with the next cursor, and long-polls for a newer delivery', async () => {
    const a = await deliver();
    const b = await deliver();
    const res = await api('/export?limit=1');
    expect(res.headers.get('content-type')).toMatch(/ndjson/);
    const lines = (await res.text()).trim().split('\n');
    expect(lines.map((l) => JSON.parse(l).event_id)).toEqual([a.eventId]);
    const cursor = res.headers.get('x-podhook-next-cursor')!;
    const rest = await api(`/export?cursor=${encodeURIComponent(cursor)}`);
    expect((await rest.text()).trim().split('\n').map((l) => JSON.parse(l).event_id)).toEqual([b.eventId]);
    const end = rest.headers.get('x-podhook-next-cursor')!;
    // Nothing newer: the request waits; a delivery stored meanwhile is its answer.
    const waiting = api(`/export?wait=25&cursor=${encodeURIComponent(end)}`);
    let settled = false;
    void waiting.then(() => (settled = true));
    await vi.waitFor(async () => expect(await (() => delays.length > 0)(), 'long poll waiting').toBe(true), { timeout: 5000 });
    expect(settled).toBe(false);
    const c = await deliver();
    const answer = await waiting;
    expect((await answer.text()).trim().split('\n').map((l) => JSON.parse(l).event_id)).toEqual([c.eventId]);
    // wait=0 (and nothing newer) answers at once, keeping the cursor.
    const empty = await api(`/export?cursor=${encodeURIComponent(answer.headers.get('x-podhook-next-cursor')!)}`);
    expect(await empty.text()).toBe('');
    expect(empty.headers.get('x-podhook-next-cursor')).toBe(answer.headers.get('x-podhook-next-cursor'));
    expect((await api('/export?wait=26')).status).toBe(400);
  });

  it('replays through the dispatcher, by event ids or by filters, recorded as one more attempt', async () => {
    failHandler('recordBackups');
    const dead = await deliver('pod.backup.failed');
    const dead2 = await deliver('pod.backup.failed');
    await vi.waitFor(async () => expect(await (async () => (await statusOf(dead.eventId)) === 'dead' && (await statusOf(dead2.eventId)) === 'dead')(), 'dead').toBe(true), { timeout: 5000 });
    resetRecording();
    const res = await api('/replay', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ event_ids: [dead.eventId] }) });
    expect(await res.json()).toEqual({ replayed: 1 });
    await vi.waitFor(async () => expect(await (async () => (await statusOf(dead.eventId)) === 'processed')(), 'replayed one processed').toBe(true), { timeout: 5000 });
    const record = (await (await api(`/deliveries/${dead.eventId}`)).json()) as { attempts: number; runs: { handler: string; attempt: number; outcome: string }[] };
    expect(record.attempts).toBe(2);
    // Every run, oldest first: the failed attempt, then the replay's.
    expect(record.runs).toMatchObject([
      { handler: 'recordAll', attempt: 1, outcome: 'succeeded' },
      { handler: 'recordBackups', attempt: 1, outcome: 'failed' },
      { handler: 'recordAll', attempt: 2, outcome: 'succeeded' },
      { handler: 'recordBackups', attempt: 2, outcome: 'succeeded' },
    ]);
    const byFilter = await api('/replay', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ status: 'dead', type: 'pod.backup.failed', handler: 'recordBackups' }) });
    expect(await byFilter.json()).toEqual({ replayed: 1 });
    await vi.waitFor(async () => expect(await (async () => (await statusOf(dead2.eventId)) === 'processed')(), 'filtered one processed').toBe(true), { timeout: 5000 });
    const runs2 = ((await (await api(`/deliveries/${dead2.eventId}`)).json()) as { runs: { handler: string; attempt: number }[] }).runs;
    // Only the named handler ran again.
    expect(runs2).toMatchObject([
      { handler: 'recordAll', attempt: 1 },
      { handler: 'recordBackups', attempt: 1 },
      { handler: 'recordBackups', attempt: 2 },
    ]);
    for (const body of [{}, { event_ids: ['x'] }, { status: 'dead', handler: 'nobody' }, { event_ids: [dead.eventId], extra: 1 }]) {
      const bad = await api('/replay', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      expect(bad.status).toBe(400);
    }
  });

  it('starts a backfill (dry run first), shows its progress, refuses a second one, and cancels it', async () => {
    const history = historyDeliveries({ count: 200, pods: 10, from: Date.now() - 3 * 86_400_000, eventType: 'pod.backup.completed' });
    await server.runtime.store.importDeliveries(history);
    const post = (body: unknown) => api('/backfills', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    await vi.waitFor(async () => expect((await server.runtime.store.handlerRegistrations()).map((r) => r.handler)).toContain('recordBackups'));

    const dry = await post({ handler: 'recordBackups', dry_run: true });
    expect(dry.status).toBe(200);
    expect(await dry.json()).toMatchObject({ dry_run: true, handler: 'recordBackups', types: ['pod.backup.completed', 'pod.backup.failed'], matching: 200, already_handled: 0, would_run: 200, dead_letters: 0 });
    expect(await server.runtime.store.listBackfills()).toEqual([]);

    const started = await post({ handler: 'recordBackups', since: '7d', rate: 40 });
    expect(started.status).toBe(201);
    const { backfill } = (await started.json()) as { backfill: { id: string; state: string; total: number } };
    expect(backfill).toMatchObject({ state: 'running', total: 200, rate: 40 });
    const second = await post({ handler: 'recordBackups' });
    expect(second.status).toBe(400);
    expect(await second.json()).toEqual({
      error: { code: 'invalid_request', message: `a backfill of recordBackups is already running (${backfill.id}): cancel it or wait for it to finish`, details: { backfill_id: backfill.id } },
    });

    // Paced at 40/s: progress shows while it runs, with a rate and an estimated end.
    type Listed = { id: string; state: string; requeued: number; remaining: number; rate_per_second: number | null; estimated_end: string | null; running_on: string | null };
    let listed: Listed | undefined;
    await vi.waitFor(
      async () => {
        listed = ((await (await api('/backfills')).json()) as { backfills: Listed[] }).backfills[0];
        expect(listed?.requeued).toBeGreaterThanOrEqual(40);
        expect(listed?.rate_per_second).toBeGreaterThan(0);
      },
      { timeout: 10_000, interval: 100 },
    );
    expect(listed).toMatchObject({ id: backfill.id, state: 'running', running_on: server.runtime.dispatcher.owner });
    expect(listed!.remaining).toBeGreaterThan(0);
    expect(Date.parse(listed!.estimated_end!)).toBeGreaterThan(Date.now());
    const cancel = await post({ cancel: backfill.id });
    expect(cancel.status).toBe(200);
    const cancelled = ((await cancel.json()) as { backfill: { state: string; requeued: number } }).backfill;
    expect(cancelled.state).toBe('cancelled');
    expect((await post({ cancel: backfill.id })).status).toBe(404);
    // It stops: the runner's next step finds it cancelled (and says so) and hands over nothing
    // more; what was handed over runs.
    const letGo = (r: Record<string, unknown>) => r.msg === 'backfill no longer held here (cancelled, finished or taken over)' && r.backfill_id === backfill.id;
    await vi.waitFor(() => expect(log.records().some(letGo), 'the runner let the cancelled backfill go').toBe(true), { timeout: 5_000 });
    await vi.waitFor(async () => expect((await server.runtime.store.list({ status: 'queued', limit: 10 })).length).toBe(0), { timeout: 5_000 });
    const ran = recordedCalls().filter((c) => c.handler === 'recordBackups').length;
    expect((await server.runtime.store.getBackfill(backfill.id))!.requeued).toBe(cancelled.requeued);
    expect(recordedCalls().filter((c) => c.handler === 'recordBackups')).toHaveLength(ran);
    expect(ran).toBe(cancelled.requeued);
    expect(ran).toBeLessThan(200);
    // Only the backfill's handler ran on history.
    expect(recordedCalls().filter((c) => c.handler === 'recordAll')).toEqual([]);

    for (const body of [{}, { handler: 'nobody' }, { handler: 'recordBackups', type: 'pod.created' }, { handler: 'recordBackups', since: 'last week' }, { handler: 'recordBackups', rate: 0.5 }, { cancel: 1 }, { handler: 'recordBackups', extra: 1 }]) {
      const bad = await post(body);
      expect(bad.status, JSON.stringify(body)).toBe(400);
      expect(((await bad.json()) as { error: { code: string } }).error.code).toBe('invalid_request');
    }
  });

  it('refuses times that overflow or do not exist with 400 naming the field, storing nothing; a bad stored row never takes the listing down', async () => {
    const post = (body: unknown) => api('/backfills', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    for (const [field, text] of [['since', '9999999999999d'], ['since', '2026-02-30'], ['until', '99999999999h'], ['until', '2025-04-31T10:00:00Z']] as const) {
      for (const dry_run of [false, true]) {
        const bad = await post({ handler: 'recordBackups', [field]: text, dry_run });
        expect(bad.status, `${field} ${text}`).toBe(400);
        expect(((await bad.json()) as { error: { message: string } }).error.message).toMatch(new RegExp(`^${field}: must be an ISO 8601 date or time that exists`));
      }
    }
    const replay = await api('/replay', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ status: 'dead', since: '2026-02-30' }) });
    expect(replay.status).toBe(400);
    expect((await api('/deliveries?since=2026-02-30')).status).toBe(400);
    expect(await server.runtime.store.listBackfills()).toEqual([]);

    // A row an older version stored with a start no date has.
    await server.runtime.store.createBackfill({ id: '00000000-0000-4000-8000-0000000000b1', handler: 'recordBackups', since: -864e18, until: null, eventType: null, rate: null, total: 0, createdAt: Date.now() });
    const listed = await api('/backfills');
    expect(listed.status).toBe(200);
    expect(((await listed.json()) as { backfills: { id: string; since: string | null }[] }).backfills).toEqual([expect.objectContaining({ id: '00000000-0000-4000-8000-0000000000b1', since: null })]);
    const page = await fetch(`${server.url}/_podhook/backfills`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('00000000-0000-4000-8000-0000000000b1');
    expect(log.records().filter((r) => (r.level as number) >= 50)).toEqual([]);
  });

  it('answers stats: deliveries per hour by outcome, runs and failures per handler, p50/p99, dead letters', async () => {
    failHandler('recordBackups');
    const dead = await deliver('pod.backup.failed');
    const ok = await deliver('pod.created');
    await vi.waitFor(async () => expect(await (async () => (await statusOf(dead.eventId)) === 'dead' && (await statusOf(ok.eventId)) === 'processed')(), 'settled').toBe(true), { timeout: 5000 });
    const stats = (await (await api('/stats?hours=24')).json()) as {
      hours: number;
      deliveries_per_hour: Record<string, number | string>[];
      handlers: { handler: string; runs: number; failures: number; p50_ms: number | null; p99_ms: number | null }[];
      dead_letters: number;
      last_downtime: unknown;
    };
    expect(stats.hours).toBe(24);
    expect(stats.deliveries_per_hour.length).toBeGreaterThanOrEqual(24);
    const last = stats.deliveries_per_hour.at(-1)!;
    expect(last, JSON.stringify(stats)).toMatchObject({ processed: 1, dead: 1 });
    const byName = Object.fromEntries(stats.handlers.map((h) => [h.handler, h]));
    expect(byName.recordAll).toMatchObject({ runs: 2, failures: 0 });
    expect(byName.recordBackups).toMatchObject({ runs: 1, failures: 1 });
    expect(typeof byName.recordAll!.p50_ms).toBe('number');
    expect(stats.dead_letters).toBe(1);
    expect(stats.last_downtime).toBeNull();
    expect((await api('/stats?hours=0')).status).toBe(400);
  });
});

describe('admin refusals (Node)', () => {
  beforeEach(async () => {
    delays.length = 0;
    server = await start();
  });
  afterEach(async () => {
    await server.close(100);
  });

  it('answers 401 without a token or with a wrong one, revealing nothing, logging no token, slowing each refusal', async () => {
    const d = await deliver();
    for (const path of ['/deliveries', `/deliveries/${d.eventId}`, '/export', '/stats']) {
      for (const token of [null, 'x'.repeat(40), `${TOKEN}x`]) {
        const res = await api(path, {}, token);
        expect(res.status).toBe(401);
        const text = await res.text();
        expect(JSON.parse(text)).toEqual({ error: { code: 'unauthorized', message: 'Authenticate with the admin token.' } });
        expect(text).not.toContain(d.eventId);
      }
    }
    const replay = await api('/replay', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ status: 'queued' }) }, 'wrong');
    expect(replay.status).toBe(401);
    expect((await api('/deliveries', { headers: { authorization: `Basic ${TOKEN}` } }, null)).status).toBe(401);
    const failures = log.records().filter((r) => r.msg === 'admin authentication failed');
    expect(failures.length).toBeGreaterThanOrEqual(9);
    expect(failures.map((r) => r.reason)).toContain('wrong_token');
    expect(log.text()).not.toContain(TOKEN);
    expect(log.text()).not.toContain('x'.repeat(40));
    // Each refusal waited, twice as long as the one before within the minute, up to the cap.
    expect(delays.slice(0, 4)).toEqual([100, 200, 400, 800]);
    expect(Math.max(...delays)).toBe(800);
  });

  it('answers a bearer request sent as curl -d sends it (a form content type, no Origin), not as a cross-site form', async () => {
    const d = await deliver();
    // Replayed once dispatched (a delivery still being dispatched is not handed back twice).
    await vi.waitFor(async () => expect(await statusOf(d.eventId)).toBe('processed'), { timeout: 5000 });
    const curl = (path: string, body: string, headers: Record<string, string> = {}) =>
      api(path, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, body });
    const replay = await curl('/replay', JSON.stringify({ event_ids: [d.eventId] }));
    expect(replay.status).toBe(200);
    expect(await replay.json()).toEqual({ replayed: 1 });
    const backfill = await curl('/backfills', JSON.stringify({ handler: 'recordAll', dry_run: true }));
    expect(backfill.status).toBe(200);
    expect(await backfill.json()).toMatchObject({ dry_run: true });
    // Not JSON at all: a 400 that says what to send, not a 403.
    const form = await curl('/replay', 'status=dead');
    expect(form.status).toBe(400);
    expect(((await form.json()) as { error: { message: string } }).error.message).toMatch(/JSON/);
    // Without a valid token the header buys nothing: 401, and nothing is replayed.
    expect((await api('/replay', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: JSON.stringify({ status: 'dead' }) }, 'x'.repeat(40))).status).toBe(401);
  });

  it('logs in with a form: an HttpOnly, SameSite=Strict cookie that is not the token; POSTs need the CSRF field', async () => {
    const page = await fetch(`${server.url}/_podhook/`, { redirect: 'manual' });
    expect(page.status).toBe(303);
    expect(page.headers.get('location')).toBe('/_podhook/login');
    const form = (token: string, extra: Record<string, string> = {}) =>
      fetch(`${server.url}/_podhook/login`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', origin: server.url, ...extra },
        body: new URLSearchParams({ token }).toString(),
      });
    const wrong = await form('not-the-token');
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('set-cookie')).toBeNull();
    // A login posted from another site is refused before the token is looked at.
    expect((await form(TOKEN, { origin: 'https://evil.example' })).status).toBe(403);
    const ok = await form(TOKEN);
    expect(ok.status).toBe(303);
    const setCookie = ok.headers.get('set-cookie')!;
    expect(setCookie).toMatch(/HttpOnly/);
    expect(setCookie).toMatch(/SameSite=Strict/);
    expect(setCookie).toMatch(/Path=\/_podhook/);
    expect(setCookie).not.toMatch(/Secure/);
    expect(setCookie).not.toContain(TOKEN);
    expect((await form(TOKEN, { 'x-forwarded-proto': 'https' })).headers.get('set-cookie')).toMatch(/Secure/);
    const cookie = setCookie.split(';')[0]!;
    const inspector = await fetch(`${server.url}/_podhook/`, { headers: { cookie } });
    expect(inspector.status).toBe(200);
    expect(inspector.headers.get('content-security-policy')).toMatch(/default-src 'none'/);
    expect(await api('/stats', { headers: { cookie } }, null).then((r) => r.status)).toBe(200);

    const d = await deliver();
    const post = (path: string, body: Record<string, string>, headers: Record<string, string> = {}) =>
      fetch(`${server.url}/_podhook${path}`, {
        method: 'POST',
        redirect: 'manual',
        headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', origin: server.url, ...headers },
        body: new URLSearchParams(body).toString(),
      });
    expect((await post(`/deliveries/${d.eventId}/redeliver`, {})).status).toBe(403);
    expect((await post(`/deliveries/${d.eventId}/redeliver`, { csrf: 'forged' })).status).toBe(403);
    const html = await inspector.text();
    const csrf = /name="csrf" value="([0-9a-f]{64})"/.exec(html)![1]!;
    expect((await post(`/deliveries/${d.eventId}/redeliver`, { csrf }, { origin: 'https://evil.example' })).status).toBe(403);
    // The JSON API with a cookie (a browser) needs the header too; a bearer token does not.
    const jsonReplay = (headers: Record<string, string>) =>
      fetch(`${server.url}/_podhook/api/replay`, { method: 'POST', headers: { cookie, 'content-type': 'application/json', ...headers }, body: JSON.stringify({ event_ids: [d.eventId] }) });
    expect((await jsonReplay({})).status).toBe(403);
    expect((await jsonReplay({ 'x-podhook-csrf': csrf })).status).toBe(200);
    const jsonBackfill = (headers: Record<string, string>) =>
      fetch(`${server.url}/_podhook/api/backfills`, { method: 'POST', headers: { cookie, 'content-type': 'application/json', ...headers }, body: JSON.stringify({ handler: 'recordAll', dry_run: true }) });
    expect((await jsonBackfill({})).status).toBe(403);
    expect((await jsonBackfill({ 'x-podhook-csrf': csrf })).status).toBe(200);
    expect((await post('/backfills/00000000-0000-4000-8000-000000000000/cancel', { csrf: 'forged' })).status).toBe(403);
    const redelivered = await post(`/deliveries/${d.eventId}/redeliver`, { csrf });
    expect(redelivered.status).toBe(303);
    expect(log.text()).not.toContain(TOKEN);
    // A forged or expired cookie is refused like a wrong token.
    expect((await api('/stats', { headers: { cookie: `podhook_admin=${encodeURIComponent('99999999999999.forged')}` } }, null)).status).toBe(401);
  });
});

describe('the last downtime (from the alerts heartbeat)', () => {
  it('is in the stats and the inspector banner, with what the sender does about it', async () => {
    const until = Date.now() - 60_000;
    const from = until - 23 * 3_600_000;
    log = captureLogger();
    server = await startAdminServer(tempDir(), { token: TOKEN, logger: log.logger, admin: { lastDowntime: async () => ({ from, until }) } });
    try {
      const stats = (await (await api('/stats')).json()) as { last_downtime: unknown };
      expect(stats.last_downtime).toEqual({ from: new Date(from).toISOString(), until: new Date(until).toISOString(), minutes: 23 * 60 });
      const page = await (await fetch(`${server.url}/_podhook/?since=yesterday`, { headers: { authorization: `Bearer ${TOKEN}` } })).text();
      expect(page).toContain('podhook was down for 23 h');
      expect(page).toContain('probably disabled the webhook');
      // A filter typed wrong is shown on the page, not answered as an error.
      expect(page).toContain('Filter not applied: since must be an ISO 8601 date or time');
    } finally {
      await server.close(100);
    }
  });
});

describe('admin off, and a short token', () => {
  let off: RunningServer;
  beforeEach(async () => {
    off = await startServer({
      config: parseConfig({ DATABASE_PATH: dbIn(tempDir()), SVC_WEBHOOK_SECRET: TEST_SECRET, PORT: '0', HOST: '127.0.0.1' }),
      logger: captureLogger().logger,
      handlers,
    });
  });
  afterEach(async () => {
    await off.close(100);
  });

  it('answers 404 on every /_podhook route when ADMIN_TOKEN is unset, token or not', async () => {
    for (const path of ['/_podhook', '/_podhook/', '/_podhook/login', '/_podhook/api/deliveries', '/_podhook/api/export', '/_podhook/api/stats']) {
      for (const headers of [{}, { authorization: `Bearer ${TOKEN}` }] as Record<string, string>[]) {
        const res = await fetch(`${off.url}${path}`, { headers });
        expect(res.status).toBe(404);
        expect(((await res.json()) as { error: { code: string } }).error.code).toBe('not_found');
      }
    }
    expect((await fetch(`${off.url}/_podhook/api/replay`, { method: 'POST', body: '{}' })).status).toBe(404);
  });

  it('refuses a short ADMIN_TOKEN at start with one line, exit 2, without echoing it', async () => {
    expect(() => parseConfig({ ADMIN_TOKEN: 'short-token' })).toThrow(ConfigError);
    expect(() => parseConfig({ ADMIN_TOKEN: 'short-token' })).toThrow(/^invalid configuration: ADMIN_TOKEN must be at least 32 characters/);
    const result = await runCli(['serve'], { ADMIN_TOKEN: 'short-token-value', DATABASE_PATH: dbIn(tempDir()), PORT: '0', HOST: '127.0.0.1' });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/ADMIN_TOKEN must be at least 32 characters/);
    expect(result.stderr + result.stdout).not.toContain('short-token-value');
    expect(parseConfig({ ADMIN_TOKEN: TOKEN }).adminToken).toBe(TOKEN);
    expect(parseConfig({}).adminToken).toBeNull();
  });
});
