import { randomUUID } from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import type { DeliveryStore } from '../../src/core/delivery-store.js';
import { FIXED_NOW_MS, signDelivery, TEST_SECRET, toRequest, type SignedDelivery } from '../helpers/sign.js';

export interface HttpTargetOptions {
  /** Secrets configured in the environment (`SVC_WEBHOOK_SECRET`). */
  secrets: string[];
  maxBodyBytes?: number;
}

/** A running receiver as a test sees it, whatever the runtime. */
export interface HttpTarget {
  fetch(request: Request): Promise<Response>;
  /** Sets the receiver's clock (epoch ms). */
  setNow(ms: number): void;
  store: DeliveryStore;
  close(): Promise<void> | void;
  /**
   * How long a stored secret may still be accepted once removed, when the receiver keeps what it
   * read (the Worker, per isolate); the contract moves the receiver's clock past it. Unset: soon.
   */
  secretRemovalBoundMs?: number;
}

const URL_BASE = 'http://podhook.test';

/**
 * The HTTP contract of `POST /webhooks`, `/healthz` and `/readyz`: one suite, run against the
 * Node service and the Worker. Runtime-specific failure paths (a locked store, log capture,
 * a chunked body over real TCP) live beside each target.
 */
export function describeHttpContract(name: string, open: (options: HttpTargetOptions) => Promise<HttpTarget>) {
  describe(`HTTP contract: ${name}`, () => {
    const withTarget =
      (fn: (t: HttpTarget) => Promise<void>, options: HttpTargetOptions = { secrets: [TEST_SECRET], maxBodyBytes: 4096 }) =>
      async () => {
        const target = await open(options);
        target.setNow(FIXED_NOW_MS);
        try {
          await fn(target);
        } finally {
          await target.close();
        }
      };
    const post = (t: HttpTarget, d: SignedDelivery, headers: Record<string, string> = {}) =>
      t.fetch(toRequest(d, `${URL_BASE}/webhooks`, headers));
    const expectError = async (res: Response, status: number, code: string) => {
      expect(res.status).toBe(status);
      const body = (await res.json()) as { error: { code: string; message: string } };
      expect(body.error.code).toBe(code);
      expect(typeof body.error.message).toBe('string');
      return body;
    };
    const count = async (t: HttpTarget) => (await t.store.list({ limit: 1000 })).length;

    it(
      'acknowledges a new authentic delivery after storing it',
      withTarget(async (t) => {
        const d = signDelivery();
        const res = await post(t, d);
        expect(res.status).toBe(200);
        expect(res.headers.get('content-type')).toMatch(/application\/json/);
        expect(await res.json()).toEqual({ received: true, event_id: d.eventId, duplicate: false });
        const row = await t.store.get(d.eventId);
        expect(row).toMatchObject({ eventType: 'pod.created', status: 'queued', deliveryCount: 1, signatureT: d.t });
        expect(Array.from(row!.body)).toEqual(Array.from(d.body));
        expect(row!.headers['x-svc-event-id']).toBe(d.eventId);
        expect(row!.headers['x-svc-signature']).toBeUndefined();
      }),
    );

    it(
      'answers duplicate:true for a retry re-signed with a fresh t, and counts it',
      withTarget(async (t) => {
        const d = signDelivery();
        await post(t, d);
        t.setNow(FIXED_NOW_MS + 60_000);
        const retry = signDelivery({ eventId: d.eventId, body: d.body, t: d.t + 60 });
        const res = await post(t, retry);
        expect(await res.json()).toEqual({ received: true, event_id: d.eventId, duplicate: true });
        expect(await post(t, retry).then((r) => r.json())).toMatchObject({ duplicate: true });
        expect((await t.store.get(d.eventId))!.deliveryCount).toBe(3);
      }),
    );

    it(
      'compares event ids lower-cased',
      withTarget(async (t) => {
        const id = randomUUID();
        const first = await post(t, signDelivery({ eventId: id.toUpperCase() }));
        expect(await first.json()).toMatchObject({ event_id: id, duplicate: false });
        const second = await post(t, signDelivery({ eventId: id, t: FIXED_NOW_MS / 1000 + 1 }));
        expect(await second.json()).toMatchObject({ event_id: id, duplicate: true });
      }),
    );

    it(
      'quarantines the same signed content under a new event id: 200 conflict:true, stored, never due; a further copy is a duplicate',
      withTarget(async (t) => {
        const d = signDelivery();
        await post(t, d);
        const replayId = randomUUID();
        const replay = { ...d, headers: { ...d.headers, 'x-svc-event-id': replayId } };
        const res = await post(t, replay);
        expect(res.status).toBe(200);
        expect(await res.json()).toEqual({ received: true, event_id: replayId, duplicate: false, conflict: true });
        expect(await t.store.get(replayId)).toMatchObject({ status: 'quarantined', conflictWith: d.eventId, nextAttemptAt: null });
        expect((await t.store.get(d.eventId))!.deliveryCount).toBe(1);
        expect(await post(t, replay).then((r) => r.json())).toEqual({ received: true, event_id: replayId, duplicate: true });
        expect(await count(t)).toBe(2);
      }),
    );

    it(
      'quarantines the same event id under another type (200 conflict:true) and keeps the first copy',
      withTarget(async (t) => {
        const d = signDelivery();
        await post(t, d);
        const res = await post(t, d, { 'x-svc-event-type': 'pod.destroyed' });
        expect(res.status).toBe(200);
        expect(await res.json()).toEqual({ received: true, event_id: d.eventId, duplicate: false, conflict: true });
        expect(await t.store.get(d.eventId)).toMatchObject({ eventType: 'pod.created', deliveryCount: 1 });
        const [quarantined] = await t.store.list({ status: 'quarantined' });
        expect(quarantined).toMatchObject({ eventType: 'pod.destroyed', conflictWith: d.eventId, status: 'quarantined' });
        expect(quarantined!.eventId).not.toBe(d.eventId);
        expect(quarantined!.headers['x-svc-event-id']).toBe(d.eventId);
        const again = await post(t, d, { 'x-svc-event-type': 'pod.destroyed' });
        expect(await again.json()).toEqual({ received: true, event_id: d.eventId, duplicate: true });
        expect(await count(t)).toBe(2);
      }),
    );

    it.each([
      ['no signature header', { 'x-svc-signature': '' }],
      ['repeated t', { 'x-svc-signature': `t=1790000000,t=1790000000,v1=${'a'.repeat(64)}` }],
      ['unknown schemes only', { 'x-svc-signature': `t=1790000000,v2=${'a'.repeat(64)}` }],
      ['short v1', { 'x-svc-signature': `t=1790000000,v1=${'a'.repeat(63)}` }],
      ['non-hex v1', { 'x-svc-signature': `t=1790000000,v1=${'z'.repeat(64)}` }],
      ['non-integer t', { 'x-svc-signature': `t=1790000000.5,v1=${'a'.repeat(64)}` }],
      ['no event id', { 'x-svc-event-id': '' }],
      ['event id not a uuid', { 'x-svc-event-id': 'evt_123' }],
      ['no event type', { 'x-svc-event-type': '' }],
    ])(
      'answers 400 invalid_request for %s, storing nothing',
      async (_label, override) => {
        await withTarget(async (t) => {
          const d = signDelivery();
          const headers: Record<string, string> = { ...d.headers, ...override };
          for (const [k, v] of Object.entries(headers)) if (v === '') delete headers[k];
          const res = await t.fetch(new Request(`${URL_BASE}/webhooks`, { method: 'POST', body: d.body, headers }));
          await expectError(res, 400, 'invalid_request');
          expect(await count(t)).toBe(0);
        })();
      },
    );

    it(
      'answers 401 with one message for every authentication failure, storing nothing',
      withTarget(async (t) => {
        const now = FIXED_NOW_MS / 1000;
        const flipped = signDelivery();
        flipped.body[3]! ^= 0x20;
        const reserialised = signDelivery({ body: '{"a": 1,  "b": [1, 2]}' });
        reserialised.body = new Uint8Array(new TextEncoder().encode(JSON.stringify({ a: 1, b: [1, 2] })));
        const cases = [
          signDelivery({ secret: 'not-the-secret' }),
          flipped,
          reserialised,
          signDelivery({ t: now - 301 }),
          signDelivery({ t: now + 301 }),
        ];
        const messages = new Set<string>();
        for (const d of cases) {
          const body = await expectError(await post(t, d), 401, 'unauthorized');
          messages.add(body.error.message);
        }
        expect(messages.size).toBe(1);
        expect([...messages][0]).not.toMatch(/timestamp|window|old|future|secret/i);
        expect(await count(t)).toBe(0);
      }),
    );

    it(
      'accepts both window edges: exactly 300 s old and 300 s ahead',
      withTarget(async (t) => {
        const now = FIXED_NOW_MS / 1000;
        expect((await post(t, signDelivery({ t: now - 300 }))).status).toBe(200);
        expect((await post(t, signDelivery({ t: now + 300 }))).status).toBe(200);
      }),
    );

    it(
      'answers 413 payload_too_large for a declared body over the cap, before checking headers',
      withTarget(async (t) => {
        const d = signDelivery({ body: 'x'.repeat(4097) });
        const declared = { 'x-svc-event-id': 'nope', 'content-length': String(d.body.length) };
        const res = await t.fetch(new Request(`${URL_BASE}/webhooks`, { method: 'POST', body: d.body, headers: declared }));
        await expectError(res, 413, 'payload_too_large');
        expect(await count(t)).toBe(0);
        const atCap = signDelivery({ body: JSON.stringify({ pad: 'y'.repeat(4096 - 10) }) });
        expect(atCap.body.length).toBe(4096);
        expect((await post(t, atCap)).status).toBe(200);
      }),
    );

    it(
      'checks headers before the signature',
      withTarget(async (t) => {
        const d = signDelivery({ secret: 'wrong' });
        await expectError(await post(t, d, { 'x-svc-event-id': 'not-a-uuid' }), 400, 'invalid_request');
      }),
    );

    it(
      'stores an unknown event type as ignored and answers 200',
      withTarget(async (t) => {
        const d = signDelivery({ eventType: 'pod.teleported' });
        expect(await post(t, d).then((r) => r.json())).toMatchObject({ received: true, duplicate: false });
        expect(await t.store.get(d.eventId)).toMatchObject({ status: 'ignored', eventType: 'pod.teleported' });
      }),
    );

    it.each([
      ['an empty body', new Uint8Array(0), /^empty_body/],
      ['a non-UTF-8 body', new Uint8Array([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d]), /^invalid_utf8/],
      ['a non-JSON body', new TextEncoder().encode('pod created, id 42'), /^invalid_json/],
    ])('stores %s of an authentic delivery as dead, byte-exact, and answers 200', async (_label, body, reason) => {
      await withTarget(async (t) => {
        const d = signDelivery({ body });
        const res = await post(t, d);
        expect(res.status).toBe(200);
        const row = await t.store.get(d.eventId);
        expect(row?.status).toBe('dead');
        expect(row?.lastError).toMatch(reason);
        expect(Array.from(row!.body)).toEqual(Array.from(body));
      })();
    });

    it(
      'echoes a valid x-request-id and replaces an invalid one, on every response',
      withTarget(async (t) => {
        const ok = await post(t, signDelivery(), { 'x-request-id': 'req.abc_123-XYZ' });
        expect(ok.headers.get('x-request-id')).toBe('req.abc_123-XYZ');
        for (const bad of ['short', 'has space in it', 'x'.repeat(65), 'semi;colon!']) {
          const res = await post(t, signDelivery(), { 'x-request-id': bad });
          const id = res.headers.get('x-request-id');
          expect(id).not.toBe(bad);
          expect(id).toMatch(/^[A-Za-z0-9._-]{8,64}$/);
        }
        const err = await t.fetch(new Request(`${URL_BASE}/webhooks`, { method: 'POST', body: '{}' }));
        expect(err.status).toBe(400);
        expect(err.headers.get('x-request-id')).toMatch(/^[A-Za-z0-9._-]{8,64}$/);
      }),
    );

    it(
      'accepts every configured secret (rotation)',
      withTarget(
        async (t) => {
          expect((await post(t, signDelivery({ secret: 'old-secret' }))).status).toBe(200);
          expect((await post(t, signDelivery({ secret: 'new-secret' }))).status).toBe(200);
          expect((await post(t, signDelivery({ secret: 'other' }))).status).toBe(401);
        },
        { secrets: ['new-secret', 'old-secret'] },
      ),
    );

    it(
      'accepts a secret stored in the database without a restart, and refuses it once removed',
      withTarget(
        async (t) => {
          expect((await post(t, signDelivery({ secret: 'stored-secret' }))).status).toBe(401);
          await t.store.addSecret({ id: randomUUID(), webhookId: null, url: null, eventTypes: null, secret: 'stored-secret', fingerprint: 'fp-stored', createdAt: 1 });
          await vi.waitFor(async () => expect((await post(t, signDelivery({ secret: 'stored-secret' }))).status === 200).toBe(true), { timeout: 5000 });
          await t.store.removeSecret('fp-stored');
          if (t.secretRemovalBoundMs !== undefined) t.setNow(FIXED_NOW_MS + t.secretRemovalBoundMs);
          await vi.waitFor(async () => expect((await post(t, signDelivery({ secret: 'stored-secret' }))).status === 401).toBe(true), { timeout: 5000 });
        },
        { secrets: ['env-secret'] },
      ),
    );

    it(
      'with no secret at all: reports not ready and refuses deliveries with 503 and Retry-After',
      withTarget(
        async (t) => {
          const ready = await t.fetch(new Request(`${URL_BASE}/readyz`));
          expect(ready.status).toBe(503);
          expect(await ready.json()).toMatchObject({ status: 'not_ready', checks: { store: 'ok' } });
          const res = await post(t, signDelivery());
          await expectError(res, 503, 'unavailable');
          expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
          expect(await count(t)).toBe(0);
        },
        { secrets: [] },
      ),
    );

    it(
      'answers /healthz and /readyz',
      withTarget(async (t) => {
        expect(await (await t.fetch(new Request(`${URL_BASE}/healthz`))).json()).toEqual({ status: 'ok' });
        const ready = await t.fetch(new Request(`${URL_BASE}/readyz`));
        expect(ready.status).toBe(200);
        expect(await ready.json()).toEqual({ status: 'ready', checks: { store: 'ok', secret: 'ok' } });
      }),
    );

    it(
      'answers 405 for another method on the ingest route and 404 elsewhere, in the error shape',
      withTarget(async (t) => {
        const get = await t.fetch(new Request(`${URL_BASE}/webhooks`));
        await expectError(get, 405, 'method_not_allowed');
        expect(get.headers.get('allow')).toBe('POST');
        await expectError(await t.fetch(new Request(`${URL_BASE}/nope`)), 404, 'not_found');
      }),
    );
  });
}
