import { existsSync } from 'node:fs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { defineHandler } from 'podhook';
import { createTestReceiver, runHandler, signatureHeader, signDelivery, testEvent, type TestReceiver } from 'podhook/testing';
import { parseConfig } from '../../src/core/config.js';
import { startServer } from '../../src/node/serve.js';
import { silentLogger } from '../../src/core/observability/logger.js';
import { handlers as recording, recordedCalls, resetRecording } from '../fixtures/recording-handlers.js';
import { mac } from '../helpers/sign.js';
import { dbIn, useTempDir } from '../helpers/temp-dir.js';
import { compileFit } from '../../src/core/shapes/index.js';
import { learnedShapes } from '../fixtures/shapes/learned-samples.js';

// podhook's own tests never depend on the team's handlers/_payloads.ts: here it has learned nothing.
vi.mock('../../src/testing/project-payloads.js', () => ({ projectShapes: { format: 'podhook.shapes.v1', types: {} } }));

const tempDir = useTempDir();
const receivers: TestReceiver[] = [];
afterEach(async () => {
  for (const r of receivers.splice(0)) await r.close();
});
const receiver = async (options: Parameters<typeof createTestReceiver>[0]) => {
  const r = await createTestReceiver(options);
  receivers.push(r);
  return r;
};

describe('testEvent', () => {
  it('builds the event a handler receives: fresh uuid, default payload deep-merged, its raw bytes, attempt 1', () => {
    const at = new Date('2026-11-25T03:00:00Z');
    const a = testEvent('pod.renewed', { payload: { pod: { name: 'renamed' }, note: 'extra' }, receivedAt: at });
    const b = testEvent('pod.renewed');
    expect(a.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(a.id).not.toBe(b.id);
    expect(a).toMatchObject({ type: 'pod.renewed', attempt: 1, receivedAt: at, signatureTimestamp: Date.parse('2026-11-25T03:00:00Z') / 1000 });
    // Merged: the override's field, the default's siblings kept.
    expect(a.payload.pod).toMatchObject({ name: 'renamed', slug: 'demo-pod', status: 'active' });
    expect(a.payload).toMatchObject({ note: 'extra', auto_renew: true });
    expect(JSON.parse(new TextDecoder().decode(a.rawBody))).toEqual(a.payload);
    expect(testEvent('pod.created', { id: 'e-1', attempt: 3 })).toMatchObject({ id: 'e-1', attempt: 3 });
  });
});

describe('testEvent from learned shapes', () => {
  it('builds the payload from the type\'s learned shape: required fields, recorded values, uuids, date-times at receivedAt', () => {
    const shapes = learnedShapes();
    const at = new Date('2026-11-25T03:00:00Z');
    const event = testEvent('pod.created', { shapes, receivedAt: at, seed: 7 });
    expect(event.payload).toEqual({
      occurred_at: '2026-11-25T03:00:00.000Z',
      pod: { id: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/), name: 'name', status: 'active', tier: 'starter' },
    });
    expect(compileFit(shapes.types['pod.created']!.shape)(event.payload)).toBe(true);
    // The same seed and time: the same payload; overrides merge in as with default payloads.
    expect(testEvent('pod.created', { shapes, receivedAt: at, seed: 7 }).payload).toEqual(event.payload);
    expect(testEvent('pod.created', { shapes, payload: { pod: { status: 'provisioning' } } }).payload).toMatchObject({ pod: { status: 'provisioning', tier: 'starter' } });
    // A type without a learned shape, or shapes: null, gets the default payload.
    expect(testEvent('pod.renewed', { shapes }).payload).toMatchObject({ auto_renew: true });
    expect(testEvent('pod.created', { shapes: null }).payload).toMatchObject({ pod: { slug: 'demo-pod' } });
  });
});

describe('runHandler', () => {
  it('runs a handler and returns its log lines, bound like the dispatcher binds them', async () => {
    const h = defineHandler('pod.*', async function greet(event, { log }) {
      log.info({ pod_id: event.payload.pod }, 'hello');
    });
    const event = testEvent('pod.active');
    const result = await runHandler(h, event);
    expect(result).toMatchObject({ ok: true, outcome: 'succeeded' });
    expect(result.error).toBeUndefined();
    expect(result.logs).toEqual([{ level: 'info', msg: 'hello', pod_id: event.payload.pod, event_id: event.id, event_type: 'pod.active', handler: 'greet', attempt: 1 }]);
    expect(result.durationMs).toBeGreaterThanOrEqual(0);
  });

  it('never throws: a thrown error comes back as it was thrown', async () => {
    const boom = new TypeError('no such pod');
    const result = await runHandler(defineHandler('pod.created', () => { throw boom; }), testEvent('pod.created'));
    expect(result).toMatchObject({ ok: false, outcome: 'failed' });
    expect(result.error).toBe(boom);
  });

  it('ends a call at its time limit and aborts its signal', async () => {
    let aborted: unknown;
    const stuck = defineHandler('pod.created', async function stuck(_e, { signal }) {
      await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve()));
      aborted = signal.reason;
      await new Promise(() => {}); // ignores the signal: no longer awaited
    });
    const result = await runHandler(stuck, testEvent('pod.created'), { timeoutMs: 20 });
    expect(result).toMatchObject({ ok: false, outcome: 'timeout' });
    expect(String(result.error)).toMatch(/timed out after 20 ms/);
    expect(String(aborted)).toMatch(/timed out after 20 ms/);
  });

  it("checks the handler's schema first: a refused payload is invalid_payload, the handler never runs", async () => {
    let ran = false;
    const strict = defineHandler('pod.created', { name: 'strict', schema: z.looseObject({ plan: z.string() }) }, () => {
      ran = true;
    });
    const result = await runHandler(strict, testEvent('pod.created'));
    expect(result).toMatchObject({ ok: false, outcome: 'invalid_payload' });
    expect(String(result.error)).toContain('invalid_payload: plan:');
    expect(ran).toBe(false);
    expect((await runHandler(strict, testEvent('pod.created', { payload: { plan: 'pro' } }))).ok).toBe(true);
  });
});

describe('signatureHeader and signDelivery', () => {
  it('sign as the service does, and a real receiver on a port accepts the delivery', async () => {
    const body = '{"pod":{"id":"p-1"}}';
    expect(await signatureHeader('s3cret', body, 1_790_000_000)).toBe(`t=1790000000,v1=${mac('s3cret', 1_790_000_000, body)}`);
    expect(await signatureHeader('s3cret', new TextEncoder().encode(body))).toMatch(/^t=\d{10},v1=[0-9a-f]{64}$/);

    resetRecording();
    const config = parseConfig({ DATABASE_PATH: dbIn(tempDir()), SVC_WEBHOOK_SECRET: 's3cret', PORT: '0', HOST: '127.0.0.1' });
    const server = await startServer({ config, logger: silentLogger, handlers: recording });
    try {
      const d = await signDelivery({ secret: 's3cret', type: 'pod.expiring', payload: { pod: { id: 'p-9' } } });
      const res = await fetch(`${server.url}/webhooks`, { method: 'POST', headers: d.headers, body: d.body });
      expect(res.status).toBe(200);
      const forged = await signDelivery({ secret: 'other', type: 'pod.expiring' });
      expect((await fetch(`${server.url}/webhooks`, { method: 'POST', headers: forged.headers, body: forged.body })).status).toBe(401);
      expect(await server.runtime.store.get(forged.eventId)).toBeNull();
      expect(Buffer.from((await server.runtime.store.get(d.eventId))!.body).toString()).toBe('{"pod":{"id":"p-9"}}');
    } finally {
      await server.close(100);
    }
  });
});

describe('createTestReceiver', () => {
  it('stores, dispatches and reports like the real receiver: processed, duplicate, ignored', async () => {
    resetRecording();
    const r = await receiver({ handlers: recording.filter((h) => h.pattern === 'pod.backup.*') });
    const id = crypto.randomUUID();
    expect(await r.deliver('pod.backup.completed', undefined, { id })).toEqual({ status: 200, body: { received: true, event_id: id, duplicate: false } });
    expect((await r.deliver('pod.backup.completed', undefined, { id })).body).toMatchObject({ duplicate: true });
    const ignored = await r.deliver('pod.created', { pod: { id: 'p-1' } });
    await r.settle();
    const rows = await r.deliveries();
    expect(rows.map((row) => [row.event_type, row.status, row.delivery_count])).toEqual([
      ['pod.created', 'ignored', 1],
      ['pod.backup.completed', 'processed', 2],
    ]);
    expect(Object.keys(rows[0]!).sort()).toEqual(
      ['attempts', 'body_bytes', 'conflict_with', 'delivery_count', 'drift', 'event_id', 'event_type', 'last_error', 'last_received_at', 'next_attempt_at', 'parked', 'processed_at', 'received_at', 'signature_t', 'status', 'waiting_on'],
    );
    expect(rows[0]!.event_id).toBe((ignored.body as { event_id: string }).event_id);
    expect(await r.runs(id)).toEqual([{ handler: 'recordBackups', attempt: 1, outcome: 'succeeded', error: null }]);
    expect(recordedCalls().map((c) => c.payload)).toMatchObject([{ pod: { status: 'active' }, sizeBytes: 4_194_304 }]);
  });

  it('makes a delivery dead after its attempts; a bad signature and a body over the cap store nothing', async () => {
    const r = await receiver({ handlers: [defineHandler('pod.created', function broken() { throw new Error('down'); })], maxAttempts: 3, maxBodyBytes: 64 });
    const { body } = await r.deliver('pod.created', { n: 1 });
    await r.settle();
    const [row] = await r.deliveries();
    expect(row).toMatchObject({ status: 'dead', attempts: 3, last_error: 'broken: Error: down' });
    expect(await r.runs((body as { event_id: string }).event_id)).toEqual([{ handler: 'broken', attempt: 3, outcome: 'failed', error: 'Error: down' }]);
    expect((await r.deliver('pod.created', { big: 'x'.repeat(100) })).status).toBe(413);
    expect(await r.deliveries()).toHaveLength(1);
  });

  it('settle() fails, naming what is pending, when a retry never comes due in time', async () => {
    const r = await receiver({ handlers: [defineHandler('pod.created', function slowRetry() { throw new Error('later'); })], retryBaseMs: 200, retryMaxMs: 200, settleTimeoutMs: 50 });
    const { body } = await r.deliver('pod.created');
    await expect(r.settle()).rejects.toThrow(new RegExp(`settle\\(\\): deliveries still pending after 50 ms: ${(body as { event_id: string }).event_id} pod.created failed`));
  });

  it('close() removes its database file', async () => {
    const r = await createTestReceiver({ handlers: [] });
    await r.deliver('pod.created');
    expect(existsSync(r.databasePath)).toBe(true);
    await r.close();
    expect(existsSync(r.databasePath)).toBe(false);
  });
});
