// The Worker wired once per isolate (issue 46), in workerd on D1: what a delivery costs in D1 round
// trips before and after its answer, the signing secrets kept per isolate (a new one accepted by
// its first delivery, a removed one refused within WORKER_SECRETS_TTL_MS), and each invocation's
// work kept under its own waitUntil. D1 calls are counted by wrapping the binding (counting-d1.ts).
import { createExecutionContext, waitOnExecutionContext } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { randomUUID } from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import { defineHandler } from '../../src/core/events/define-handler.js';
import { createConsoleLogger } from '../../src/worker/console-logger.js';
import { WORKER_SECRETS_TTL_MS } from '../../src/worker/worker-runtime.js';
import { signDelivery, toRequest, type SignedDelivery } from '../helpers/sign.js';
import { countingD1, type D1Counts } from './counting-d1.js';
import { gatedHandler } from './gated-handler.js';
import { openWorkerTarget, type WorkerTarget } from './worker-target.js';

const quiet = defineHandler('pod.created', async function quiet() {});

/** One delivery through the target's `fetch`: its answer, and the D1 calls made before it and after it (its waitUntil). */
async function deliver(t: WorkerTarget, d1: ReturnType<typeof countingD1>, d: SignedDelivery): Promise<{ status: number; before: D1Counts; after: D1Counts }> {
  d1.take(); // what the test itself read or wrote through the binding
  const ctx = createExecutionContext();
  const res = await t.worker.fetch!(toRequest(d) as Request<unknown, IncomingRequestCfProperties>, t.env, ctx);
  const before = d1.take();
  await waitOnExecutionContext(ctx);
  return { status: res.status, before, after: d1.take() };
}

const storedSecret = (secret: string, fingerprint: string) => ({ id: randomUUID(), webhookId: null, url: null, eventTypes: null, secret, fingerprint, createdAt: 1 });

describe('the Worker wired once per isolate (D1 in workerd)', () => {
  it('costs one D1 round trip before the answer for a new delivery once the isolate has read its secrets, and one after it (its outcome)', async () => {
    const d1 = countingD1(env.DB);
    const t = await openWorkerTarget({ secrets: ['s'] }, { db: d1.db, handlers: [quiet], vars: { DISPATCHER: 'on' } });
    const sign = () => signDelivery({ secret: 's', t: Math.floor(t.now() / 1000) });

    // The isolate's first delivery: the stored secrets and API key (one batch), then the claim.
    const first = await deliver(t, d1, sign());
    expect(first.status).toBe(200);
    expect(first.before.roundTrips).toBe(2);
    // After it: its outcome, and a look for other due work (a page at most, once a second per isolate).
    expect(first.after.roundTrips).toBe(2);

    // The steady state: the claim alone (one batch: the copy's bump and the insert), then the outcome.
    const second = sign();
    const steady = await deliver(t, d1, second);
    expect(steady.status).toBe(200);
    expect(steady.before).toMatchObject({ roundTrips: 1, statements: 2 });
    expect(steady.before.sql.every((s) => /deliveries/.test(s))).toBe(true);
    expect(steady.after.roundTrips).toBe(1);
    expect(await t.store.get(second.eventId)).toMatchObject({ status: 'processed', attempts: 1 });

    // A second later, a request's drain looks for due work again (one statement).
    t.setNow(t.now() + 1_000);
    const later = await deliver(t, d1, sign());
    expect(later.before.roundTrips).toBe(1);
    expect(later.after.roundTrips).toBe(2);
  });

  it('keeps each invocation\'s work under its own waitUntil: a fast request\'s is done while a slow one\'s handlers still run', async () => {
    const { handler: slow, started, release } = gatedHandler('pod.created');
    const fast = defineHandler('pod.destroyed', async function fast() {});
    const t = await openWorkerTarget({ secrets: ['s'] }, { db: env.DB, handlers: [slow, fast], vars: { DISPATCHER: 'on' } });
    const a = signDelivery({ secret: 's', t: Math.floor(t.now() / 1000) });
    const b = signDelivery({ secret: 's', t: Math.floor(t.now() / 1000), eventType: 'pod.destroyed' });

    const ctxA = createExecutionContext();
    expect((await t.worker.fetch!(toRequest(a) as Request<unknown, IncomingRequestCfProperties>, t.env, ctxA)).status).toBe(200);
    let aDone = false;
    const waitA = waitOnExecutionContext(ctxA).then(() => (aDone = true));
    await vi.waitFor(() => expect(started).toEqual([a.eventId]), { timeout: 5000 });

    // B's invocation ends with B's handlers: it waits for nothing of A's.
    const ctxB = createExecutionContext();
    expect((await t.worker.fetch!(toRequest(b) as Request<unknown, IncomingRequestCfProperties>, t.env, ctxB)).status).toBe(200);
    await waitOnExecutionContext(ctxB);
    expect(await t.store.get(b.eventId)).toMatchObject({ status: 'processed', attempts: 1 });
    expect(aDone).toBe(false);
    expect((await t.store.get(a.eventId))!.status).toBe('queued');

    // A's handler runs under A's waitUntil, to its end.
    release();
    await waitA;
    expect(await t.store.get(a.eventId)).toMatchObject({ status: 'processed', attempts: 1 });
  });
});

describe('signing secrets kept per isolate (D1 in workerd)', () => {
  it('accepts a secret stored after the isolate read its secrets with its first delivery (one read more), and refuses a removed one once WORKER_SECRETS_TTL_MS has passed', async () => {
    const d1 = countingD1(env.DB);
    const t = await openWorkerTarget({ secrets: ['env-secret'] }, { db: d1.db });
    const readAt = t.now();
    const signed = (secret: string) => signDelivery({ secret, t: Math.floor(t.now() / 1000) });
    expect((await deliver(t, d1, signed('env-secret'))).before.roundTrips).toBe(2);

    // `podhook register` stores a secret: the first delivery signed with it is accepted.
    await t.store.addSecret(storedSecret('stored-secret', 'fp-stored'));
    const first = await deliver(t, d1, signed('stored-secret'));
    expect(first.status).toBe(200);
    expect(first.before.roundTrips).toBe(2); // the secrets read again, then the claim
    // Kept from then on: the next one costs the claim alone.
    expect((await deliver(t, d1, signed('stored-secret'))).before.roundTrips).toBe(1);

    // A forged signature: refused after one read of the secrets, nothing stored.
    const forged = signed('not-a-secret');
    const refused = await deliver(t, d1, forged);
    expect(refused.status).toBe(401);
    expect(refused.before.roundTrips).toBe(1);
    expect(await t.store.get(forged.eventId)).toBeNull();

    // Removed: still accepted while the kept list is fresh (the recheck read it at readAt)...
    expect(await t.store.removeSecret('fp-stored')).toBe(1);
    t.setNow(readAt + WORKER_SECRETS_TTL_MS - 1);
    const kept = signed('stored-secret');
    expect((await deliver(t, d1, kept)).status).toBe(200);
    // ...and refused once WORKER_SECRETS_TTL_MS has passed since that read.
    t.setNow(readAt + WORKER_SECRETS_TTL_MS);
    const late = signed('stored-secret');
    expect((await deliver(t, d1, late)).status).toBe(401);
    expect(await t.store.get(late.eventId)).toBeNull();
    expect((await deliver(t, d1, signed('env-secret'))).status).toBe(200);
  });

  it('reads the secrets ahead under a request\'s waitUntil once half the TTL has passed, so no delivery waits for the read while traffic flows', async () => {
    const d1 = countingD1(env.DB);
    const t = await openWorkerTarget({ secrets: ['env-secret'] }, { db: d1.db });
    const start = t.now();
    const signed = (secret: string) => signDelivery({ secret, t: Math.floor(t.now() / 1000) });
    expect((await deliver(t, d1, signed('env-secret'))).status).toBe(200);
    await t.store.addSecret(storedSecret('added-meanwhile', 'fp-added'));
    await t.store.removeSecret('fp-added');
    await t.store.addSecret(storedSecret('added-later', 'fp-later'));

    t.setNow(start + WORKER_SECRETS_TTL_MS / 2);
    const ahead = await deliver(t, d1, signed('env-secret'));
    expect(ahead.before.roundTrips).toBe(1); // the claim: the read goes on after the answer
    expect(ahead.after.sql.some((s) => /webhook_secrets/.test(s))).toBe(true);
    // What the read ahead found is kept: accepted with the claim alone.
    expect((await deliver(t, d1, signed('added-later'))).before.roundTrips).toBe(1);
  });

  it('answers 503 (retried by the sender), storing nothing, when the secrets cannot be read for a delivery that matched none kept', async () => {
    const d1 = countingD1(env.DB);
    const lines: string[] = [];
    for (const level of ['log', 'warn', 'error'] as const) vi.spyOn(console, level).mockImplementation((line: unknown) => void lines.push(String(line)));
    const t = await openWorkerTarget({ secrets: ['env-secret'] }, { db: d1.db, logger: createConsoleLogger({ level: 'info' }) });
    const signed = (secret: string) => signDelivery({ secret, t: Math.floor(t.now() / 1000) });
    expect((await deliver(t, d1, signed('env-secret'))).status).toBe(200);

    d1.failWhen((sql) => /webhook_secrets/.test(sql));
    const d = signed('stored-meanwhile');
    const ctx = createExecutionContext();
    const res = await t.worker.fetch!(toRequest(d) as Request<unknown, IncomingRequestCfProperties>, t.env, ctx);
    await waitOnExecutionContext(ctx);
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).not.toBeNull();
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('unavailable');
    d1.failWhen(null);
    expect(await t.store.get(d.eventId)).toBeNull();
    const logged = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.event_id === d.eventId);
    expect(logged).toMatchObject({ msg: 'delivery', outcome: 'rejected', status: 503, reason: 'store_unavailable' });
    for (const leak of ['stored-meanwhile', 'env-secret', d.headers['x-svc-signature']!]) expect(lines.join('\n')).not.toContain(leak);
    // Deliveries signed with a kept secret need no read: still accepted.
    d1.failWhen((sql) => /webhook_secrets/.test(sql));
    expect((await deliver(t, d1, signed('env-secret'))).status).toBe(200);
    d1.failWhen(null);
    vi.restoreAllMocks();
  });
});
