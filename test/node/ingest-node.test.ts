import { randomUUID } from 'node:crypto';
import { connect } from 'node:net';
import { unlinkSync } from 'node:fs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { parseConfig } from '../../src/core/config.js';
import { openDatabase } from '../../src/store/sqlite/open-database.js';
import { startServer, type RunningServer } from '../../src/node/serve.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { captureLogger } from '../helpers/capture-logger.js';
import { postChunked } from '../helpers/http.js';
import { openNodeTarget } from '../helpers/node-target.js';
import { FIXED_NOW_MS, signDelivery, TEST_SECRET, toRequest } from '../helpers/sign.js';
import { dbIn, useTempDir } from '../helpers/temp-dir.js';

const tempDir = useTempDir();
const servers: RunningServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close(100);
});

async function serveOn(dir: string, env: Record<string, string> = {}) {
  const config = parseConfig({ DATABASE_PATH: dbIn(dir), SVC_WEBHOOK_SECRET: TEST_SECRET, PORT: '0', HOST: '127.0.0.1', ...env });
  const log = captureLogger();
  const server = await startServer({ config, logger: log.logger });
  servers.push(server);
  return { server, log };
}

const now = () => Math.floor(Date.now() / 1000);

describe('Node ingest: failure paths', () => {
  it('answers 503 with Retry-After when the store cannot commit, acknowledges nothing, and recovers', async () => {
    const dir = tempDir();
    const target = openNodeTarget(dir, { secrets: [TEST_SECRET] }, { busyTimeoutMs: 50 });
    target.setNow(FIXED_NOW_MS);
    // Another process holds the write lock (a real SQLITE_BUSY, no mock).
    const other = openDatabase(target.databasePath);
    other.sqlite.exec('BEGIN IMMEDIATE');
    const d = signDelivery();
    const res = await target.fetch(toRequest(d));
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(await res.json()).toMatchObject({ error: { code: 'unavailable' } });
    other.sqlite.exec('ROLLBACK');
    expect(await target.store.get(d.eventId)).toBeNull();
    // The sender's retry then succeeds as a new delivery.
    const retry = await target.fetch(toRequest(d));
    expect(await retry.json()).toEqual({ received: true, event_id: d.eventId, duplicate: false });
    other.close();
    target.close();
  });

  it('syncs the WAL itself (synchronous=NORMAL on the server connection), and answers 503 when it cannot', async () => {
    const dir = tempDir();
    const target = openNodeTarget(dir, { secrets: [TEST_SECRET] });
    target.setNow(FIXED_NOW_MS);
    expect(target.runtime.database!.sqlite.pragma('synchronous', { simple: true })).toBe(1); // NORMAL + fdatasync per commit
    const ok = signDelivery();
    expect((await target.fetch(toRequest(ok))).status).toBe(200);
    await target.close();

    // A WAL that cannot be synced (here: unlinked before the first commit): no acknowledgement.
    const broken = openNodeTarget(tempDir(), { secrets: [TEST_SECRET] });
    broken.setNow(FIXED_NOW_MS);
    unlinkSync(`${broken.databasePath}-wal`);
    const d = signDelivery();
    const res = await broken.fetch(toRequest(d));
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(await res.json()).toMatchObject({ error: { code: 'unavailable' } });
    await broken.close();
  });

  it('logs one line per delivery with request id, event id, type, outcome, reason and latency; never a secret, signature or unauthenticated body', async () => {
    const log = captureLogger();
    const target = openNodeTarget(tempDir(), { secrets: [TEST_SECRET] }, { logger: log.logger });
    target.setNow(FIXED_NOW_MS);
    const marker = 'BODY-MARKER-7f3a';
    const good = signDelivery({ body: { marker } });
    const forged = signDelivery({ body: { marker }, secret: 'forged-secret-value' });
    const malformed = signDelivery({ body: { marker }, signatureHeader: `t=1,v1=${'9'.repeat(63)}` });
    await target.fetch(toRequest(good, undefined, { 'x-request-id': 'req-good-0001' }));
    await target.fetch(toRequest(good, undefined, { 'x-request-id': 'req-dupe-0001' }));
    await target.fetch(toRequest(forged, undefined, { 'x-request-id': 'req-forged-01' }));
    await target.fetch(toRequest(malformed));
    const replayId = randomUUID();
    await target.fetch(toRequest({ ...good, headers: { ...good.headers, 'x-svc-event-id': replayId } }));
    target.close();

    const records = log.records().filter((r) => r.msg === 'delivery');
    expect(records).toHaveLength(5);
    expect(records[0]).toMatchObject({ request_id: 'req-good-0001', event_id: good.eventId, event_type: 'pod.created', outcome: 'accepted', status: 200 });
    expect(records[1]).toMatchObject({ request_id: 'req-dupe-0001', outcome: 'duplicate' });
    expect(records[2]).toMatchObject({ request_id: 'req-forged-01', outcome: 'rejected', status: 401, reason: 'signature_mismatch', level: 40 });
    expect(records[3]).toMatchObject({ status: 400, reason: 'malformed_signature:bad_v1_signature' });
    expect(records[4]).toMatchObject({
      outcome: 'quarantined',
      status: 200,
      level: 40,
      event_id: replayId,
      event_type: 'pod.created',
      conflict_with: { event_id: good.eventId, event_type: 'pod.created' },
    });
    for (const r of records) expect(typeof r.latency_ms).toBe('number');

    const text = log.text();
    for (const secretish of [TEST_SECRET, 'forged-secret-value', marker]) expect(text).not.toContain(secretish);
    for (const d of [good, forged, malformed]) {
      const v1 = d.headers['x-svc-signature']!.split('v1=')[1]!;
      expect(text).not.toContain(v1);
    }
  });

  it('accepts a secret another process stores, without a restart', async () => {
    const dir = tempDir();
    const target = openNodeTarget(dir, { secrets: ['env-secret'] });
    target.setNow(FIXED_NOW_MS);
    expect((await target.fetch(toRequest(signDelivery({ secret: 'cli-secret' })))).status).toBe(401);
    const cli = openSqliteStore(target.databasePath);
    await cli.store.addSecret({
      id: randomUUID(), webhookId: null, url: null, eventTypes: null, secret: 'cli-secret', fingerprint: 'fp-cli', createdAt: Date.now(),
    });
    cli.close();
    expect((await target.fetch(toRequest(signDelivery({ secret: 'cli-secret' })))).status).toBe(200);
    target.close();
  });
});

describe('Node ingest over real HTTP on 127.0.0.1', () => {
  it('gives exactly one duplicate:false to concurrent copies of one delivery', async () => {
    const { server } = await serveOn(tempDir());
    const d = signDelivery({ t: now() });
    const answers = await Promise.all(
      Array.from({ length: 24 }, () =>
        fetch(`${server.url}/webhooks`, { method: 'POST', headers: d.headers, body: d.body }).then((r) => r.json() as Promise<{ duplicate: boolean }>),
      ),
    );
    expect(answers.filter((a) => a.duplicate === false)).toHaveLength(1);
    expect((await server.runtime.store.get(d.eventId))!.deliveryCount).toBe(24);
  });

  it('refuses a chunked body over the cap while reading (413) and accepts one under it', async () => {
    const { server } = await serveOn(tempDir(), { MAX_BODY_BYTES: '1024' });
    const big = signDelivery({ t: now(), body: 'x'.repeat(64 * 1024) });
    const chunks = Array.from({ length: 64 }, (_, i) => big.body.subarray(i * 1024, (i + 1) * 1024));
    const res = await postChunked(`${server.url}/webhooks`, big.headers, chunks);
    expect(res.status).toBe(413);
    expect(JSON.parse(res.body)).toMatchObject({ error: { code: 'payload_too_large' } });
    expect(await server.runtime.store.get(big.eventId)).toBeNull();

    const small = signDelivery({ t: now(), body: { ok: true, pad: 'p'.repeat(500) } });
    const half = small.body.length >> 1;
    const ok = await postChunked(`${server.url}/webhooks`, small.headers, [small.body.subarray(0, half), small.body.subarray(half)]);
    expect(ok.status).toBe(200);
    expect(Array.from((await server.runtime.store.get(small.eventId))!.body)).toEqual(Array.from(small.body));
  });

  it('stores nothing when the sender hangs up mid-body, logs why, and keeps serving', async () => {
    const { server, log } = await serveOn(tempDir());
    const d = signDelivery({ t: now() });
    const { port } = new URL(server.url);
    const head = [
      'POST /webhooks HTTP/1.1',
      'host: 127.0.0.1',
      ...Object.entries(d.headers).map(([k, v]) => `${k}: ${v}`),
      `content-length: ${d.body.length}`,
      'x-request-id: req-cut-off-01',
      '',
      '',
    ].join('\r\n');
    const socket = connect(Number(port), '127.0.0.1');
    await new Promise<void>((resolve) => socket.once('connect', resolve));
    socket.write(head);
    socket.write(d.body.subarray(0, 10));
    await vi.waitFor(() => expect(server.runtime.bodyBytesInFlight(), 'the server has the head and 10 bytes').toBe(10), { timeout: 5000 });
    socket.destroy();
    await vi.waitFor(() => expect(log.records().some((r) => r.request_id === 'req-cut-off-01')).toBe(true), { timeout: 5000 });
    expect(log.records().find((r) => r.request_id === 'req-cut-off-01')).toMatchObject({ outcome: 'rejected', reason: 'body_incomplete' });
    expect(server.runtime.bodyBytesInFlight()).toBe(0); // the 10 bytes are given back
    expect(await server.runtime.store.get(d.eventId)).toBeNull();

    const res = await fetch(`${server.url}/webhooks`, { method: 'POST', headers: d.headers, body: d.body });
    expect(res.status).toBe(200);
  });

  it('takes a query string on the ingest path, and echoes the request id', async () => {
    const { server } = await serveOn(tempDir());
    const d = signDelivery({ t: now() });
    const res = await fetch(`${server.url}/webhooks?source=svc`, { method: 'POST', headers: { ...d.headers, 'x-request-id': 'req-query-0001' }, body: d.body });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toBe('req-query-0001');
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(await res.json()).toEqual({ received: true, event_id: d.eventId, duplicate: false });
    // A trailing slash is another path (as in the Hono app): 404 in the error shape.
    const other = await fetch(`${server.url}/webhooks/`, { method: 'POST', headers: d.headers, body: d.body });
    expect(other.status).toBe(404);
    expect(other.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('batches concurrent deliveries into shared commits and acknowledges each', async () => {
    const { server } = await serveOn(tempDir());
    const ds = Array.from({ length: 200 }, () => signDelivery({ t: now() }));
    const statuses = await Promise.all(
      ds.map((d) => fetch(`${server.url}/webhooks`, { method: 'POST', headers: d.headers, body: d.body }).then((r) => r.status)),
    );
    expect(statuses.every((s) => s === 200)).toBe(true);
    expect(await server.runtime.store.list({ limit: 1000 })).toHaveLength(200);
  });
});
