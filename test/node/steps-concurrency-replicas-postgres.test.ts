// Issue 47 items 1, 2 and 4 on two `podhook serve` replicas sharing one PostgreSQL (handler
// threads on): steps run side by side (Promise.all) with one failing first, a step inside a
// step, and concurrent steps calling the pod service (a real HTTP fake on 127.0.0.1 recording
// each x-request-id). The concurrent-step-handlers fixture appends each step's side effect, with
// its idempotencyKey and process id, to one file both replicas share: each effect exactly once.
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { DeliveryStore } from '../../src/core/delivery-store.js';
import { openPostgresStore } from '../../src/store/postgres/open-postgres.js';
import type { EffectLine } from '../fixtures/concurrent-step-handlers.js';
import { CONCURRENT_STEP_REGISTRY } from '../fixtures/registry-paths.js';
import { json, useFakeServices } from '../helpers/fake-pods-service.js';
import { readJsonLines } from '../helpers/jsonl.js';
import { freshDatabaseUrl } from '../helpers/postgres.js';
import { replicaPool, send, STARVED_HOST_LEASES, waitReady } from '../helpers/replicas.js';
import { signDelivery, TEST_SECRET } from '../helpers/sign.js';
import { useTempDir } from '../helpers/temp-dir.js';

const pool = replicaPool();
const fakeService = useFakeServices();
const tempDir = useTempDir('podhook-concurrent-steps-');
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await pool.stopAll();
  await Promise.all(closers.splice(0).map((c) => c()));
});

/** Deliveries per case, half sent to each replica. */
const COUNT = 6;

async function twoReplicas() {
  const service = await fakeService((req, res) => json(res, 202, { action: { queued: 'restart', result_available: false, poll: req.url ?? '', note: '' } }));
  const url = await freshDatabaseUrl();
  const record = join(tempDir(), 'effects.jsonl');
  const env = {
    DATABASE_URL: url,
    SVC_WEBHOOK_SECRET: TEST_SECRET,
    SVC_BASE_URL: service.url,
    SVC_API_KEY: 'svc_key_concurrent_replicas_01',
    HANDLER_THREADS: '1',
    // The retries these tests look at come from steps that throw, never from a time-out or a lost
    // lease, and no replica is killed: limits a starved host cannot trip (FAST_LEASES' 2 s limit
    // cut a run between step a's two calls beside a second suite).
    ...STARVED_HOST_LEASES,
    RETRY_BASE_MS: '50',
  };
  const replicas = await Promise.all([0, 1].map(() => pool.start(env, { handlers: CONCURRENT_STEP_REGISTRY })));
  await waitReady(replicas.map((r) => r.url));
  const { store, close } = await openPostgresStore(url);
  closers.push(close);
  const lines = (id: string) => readJsonLines<EffectLine>(record).filter((l) => l.id === id);
  /** COUNT deliveries of the type, alternately to each replica; their event ids. */
  const deliverMany = async (eventType: string, body: (n: number) => Record<string, unknown> = () => ({})) => {
    const ids: string[] = [];
    for (let n = 0; n < COUNT; n++) {
      const d = signDelivery({ t: Math.floor(Date.now() / 1000), eventType, body: { record, ...body(n), n } });
      expect((await send(replicas[n % 2]!.url, d)).status).toBe(200);
      ids.push(d.eventId);
    }
    return ids;
  };
  return { replicas, store, service, lines, deliverMany };
}

const ended = (store: DeliveryStore, ids: string[], status: string) =>
  vi.waitFor(async () => {
    for (const id of ids) expect((await store.get(id))?.status, id).toBe(status);
  }, { timeout: 40_000, interval: 100 });

/** The effect lines of one delivery, by idempotencyKey: how many times each key's side effect happened. */
function effectsByKey(lines: EffectLine[]): Map<string, EffectLine[]> {
  const byKey = new Map<string, EffectLine[]>();
  for (const l of lines.filter((x) => x.what === 'effect')) byKey.set(l.key!, [...(byKey.get(l.key!) ?? []), l]);
  return byKey;
}

describe('issue 47 on two replicas of one PostgreSQL', () => {
  it('Promise.all with one step failing first: the slow steps are recorded before the run ends, and each side effect happens once whichever replica retries (item 1)', { timeout: 90_000 }, async () => {
    const t = await twoReplicas();
    const ids = await t.deliverMany('pod.backup.completed');
    await ended(t.store, ids, 'processed');
    for (const id of ids) {
      const byKey = effectsByKey(t.lines(id));
      expect([...byKey.values()].map((ls) => ls.length), id).toEqual([1, 1, 1]);
      expect([...byKey.values()].map((ls) => ls[0]!.step).sort()).toEqual(['fails first', 'slow a', 'slow b']);
      // The slow ones ran once, on the first run; the one that failed first ran again, once.
      expect([...byKey.values()].map((ls) => [ls[0]!.step, ls[0]!.stepAttempt]).sort()).toEqual([['fails first', 2], ['slow a', 1], ['slow b', 1]]);
      expect((await t.store.loadSteps(id, 'parallelSteps')).map((s) => [s.name, s.state, s.attempts]).sort()).toEqual([['fails first', 'done', 2], ['slow a', 'done', 1], ['slow b', 'done', 1]]);
    }
    // Both replicas ran handlers.
    expect(new Set(ids.flatMap((id) => t.lines(id).map((l) => l.pid)))).toEqual(new Set(t.replicas.map((r) => r.child.pid)));
  });

  it('a step inside a step is refused at the call with step_nested: the delivery is dead at once with that error, the outer effect happened once, the inner never ran (item 2)', { timeout: 90_000 }, async () => {
    const t = await twoReplicas();
    const ids = await t.deliverMany('pod.renewed');
    await ended(t.store, ids, 'dead');
    for (const id of ids) {
      const lines = t.lines(id);
      expect(lines.map((l) => [l.what, l.step]), id).toEqual([['effect', 'outer'], ['refused', 'inner']]);
      expect(lines[1]).toMatchObject({ code: 'step_nested', error: expect.stringContaining('steps do not nest') });
      expect(await t.store.get(id)).toMatchObject({ status: 'dead', attempts: 1, lastError: expect.stringContaining('step "inner" was asked for inside step "outer": steps do not nest') });
    }
  });

  it('concurrent steps calling the service: the same request ids per step on the retry, on either replica; each step\'s effect once (item 4)', { timeout: 90_000 }, async () => {
    const t = await twoReplicas();
    const pods = Array.from({ length: COUNT }, () => ({ a: randomUUID(), b: randomUUID(), outside: randomUUID() }));
    const ids = await t.deliverMany('pod.backup.failed', (n) => ({ pods: pods[n] }));
    await ended(t.store, ids, 'processed');
    const idsTo = (pod: string) => t.service.requests.filter((r) => r.url.includes(`/pods/${pod}/`)).map((r) => r.requestId);
    for (const [n, id] of ids.entries()) {
      const lines = t.lines(id);
      const byKey = effectsByKey(lines);
      expect([...byKey.values()].map((ls) => ls.length), id).toEqual([1, 1]);
      const key = (step: string) => lines.find((l) => l.step === step)!.key!;
      const [ka, kb] = [key('call a'), key('call b')];
      // Each attempt that ran the steps sent the same ids: step a's two calls, step b's one, and
      // the run's own call numbered by its attempt (a busy host may time out one attempt more).
      const runId = new RegExp(`^${id}\\.[0-9a-f]{8}\\.(\\d+)\\.1$`);
      const attempts = idsTo(pods[n]!.outside).map((r) => runId.exec(r ?? '')?.[1]);
      expect(attempts.length).toBeGreaterThanOrEqual(2);
      expect(attempts).toEqual(attempts.map((_, i) => String(i + 1)));
      const toA = idsTo(pods[n]!.a);
      expect(toA.length).toBeGreaterThanOrEqual(4);
      expect(toA).toEqual(Array.from({ length: Math.max(4, toA.length + (toA.length % 2)) }, (_, i) => (i % 2 === 0 ? ka : `${ka}.2`)));
      const toB = idsTo(pods[n]!.b);
      expect(toB.length).toBeGreaterThanOrEqual(2);
      expect(toB).toEqual(toB.map(() => kb));
    }
  });
});
