import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { runCli } from '../helpers/spawn-podhook.js';
import { parseConfig } from '../../src/core/config.js';
import { silentLogger } from '../../src/core/observability/logger.js';
import { createNodeRuntime, type NodeRuntime } from '../../src/node/node-runtime.js';
import { readOrderWaits, waitingOnOf } from '../../src/core/order/waiting-on.js';
import { deliveryJson } from '../../src/core/transfer/delivery-export.js';
import { createReplayer } from '../../src/core/transfer/replay-delivery.js';
import { createOrderGate, createOrdering } from '../../src/core/order/index.js';
import { createRouter } from '../../src/core/dispatch/router.js';
import { handlers, orderedRuns, resetOrderedRuns, type OrderedRun } from '../fixtures/ordered-handlers.js';
import { signDelivery, TEST_SECRET } from '../helpers/sign.js';
import { dbIn, useTempDir } from '../helpers/temp-dir.js';

const tempDir = useTempDir();
let runtime: NodeRuntime | undefined;
afterEach(async () => {
  await runtime?.close(1000);
  runtime = undefined;
});
beforeEach(() => resetOrderedRuns());

function start(env: Record<string, string> = {}) {
  const config = parseConfig({
    DATABASE_PATH: dbIn(tempDir()),
    SVC_WEBHOOK_SECRET: TEST_SECRET,
    DISPATCH_POLL_MS: '50',
    RETRY_BASE_MS: '300',
    RETRY_MAX_MS: '400',
    ...env,
  });
  runtime = createNodeRuntime({ config, logger: silentLogger, handlers, random: () => 0.5 });
  runtime.startBackground();
  return runtime;
}

const BASE = Date.UTC(2026, 10, 25, 12);
const ADMIN_TOKEN = 'admin-token-for-the-order-test-0123456789';
const iso = (ms: number) => new Date(ms).toISOString();

async function post(r: NodeRuntime, eventType: string, body: Record<string, unknown>) {
  const d = signDelivery({ t: Math.floor(Date.now() / 1000), eventType, body });
  const res = await r.app.request('/webhooks', { method: 'POST', headers: d.headers, body: d.body });
  expect(res.status).toBe(200);
  return d.eventId;
}

async function settled(r: NodeRuntime, count: number) {
  await vi.waitFor(
    async () => {
      const rows = await r.store.list({ limit: 10_000 });
      expect(rows.filter((d) => d.status === 'processed' || d.status === 'dead')).toHaveLength(count);
    },
    { timeout: 30_000, interval: 50 },
  );
}

const runsOf = (handler: string, pod: string) => orderedRuns().filter((r) => r.handler === handler && r.pod === pod).sort((a, b) => a.start - b.start);

/** Each run of one pod started after the one before it ended, in `at` order. */
function expectInOrderWithoutOverlap(runs: readonly OrderedRun[]) {
  for (let i = 1; i < runs.length; i++) {
    expect(runs[i]!.start, `run ${i} of ${runs[i]!.pod} starts after run ${i - 1} ended`).toBeGreaterThanOrEqual(runs[i - 1]!.end);
    expect(runs[i]!.at, `run ${i} of ${runs[i]!.pod} is not earlier`).toBeGreaterThanOrEqual(runs[i - 1]!.at);
  }
}

describe('podhook replay of ordered handlers', () => {
  it('runs a replayed older event as stale in its turn, and hands one whose key is busy to the dispatcher', { timeout: 30_000 }, async () => {
    const r = start({ ORDER_HOLD_MS: '0', DISPATCHER: 'off' });
    const older = await post(r, 'pod.status.changed', { pod: { id: 'pod-r' }, occurred_at: iso(BASE) });
    const newer = await post(r, 'pod.status.changed', { pod: { id: 'pod-r' }, occurred_at: iso(BASE + 1000) });
    await r.dispatcher.runUntilIdle();
    resetOrderedRuns();
    const gate = createOrderGate({ store: r.store, ordering: createOrdering({ handlers, holdMs: 0 }) });
    const replayer = createReplayer({ store: r.store, router: createRouter(handlers), logger: silentLogger, gate });
    const replayed = await replayer.replay((await r.store.get(older))!);
    expect(replayed).toMatchObject({ outcome: 'succeeded', status: 'processed' });
    expect(orderedRuns().filter((x) => x.handler === 'syncPod').map((x) => [x.id, x.stale, x.newest])).toEqual([[older, true, newer]]);
    expect(replayed.runs.find((x) => x.handler === 'latestStatus')).toMatchObject({ outcome: 'skipped' });

    // Another delivery of the pod holds its key (a live lease): the replay runs only what is free.
    const third = await post(r, 'pod.status.changed', { pod: { id: 'pod-r' }, occurred_at: iso(BASE + 2000) });
    const held = await r.store.leaseEvents({ eventIds: [third], owner: 'elsewhere', now: Date.now(), leaseMs: 60_000 });
    expect((await r.store.startOrdered({ eventId: third, receivedAt: held[0]!.receivedAt, now: Date.now(), starts: [{ handler: 'syncPod', key: 'pod-r', at: BASE + 2000 }] }))[0]).toMatchObject({ started: true });
    resetOrderedRuns();
    const waiting = await replayer.replay((await r.store.get(newer))!);
    expect(waiting).toMatchObject({ outcome: 'waiting', status: 'queued' });
    expect(waiting.reason).toContain(`syncPod waits for ${third}`);
    // latestStatus has a key of its own, which is free.
    expect(orderedRuns().map((x) => x.handler).sort()).toEqual(['latestStatus', 'notify']);
  });
});

describe('ordered handlers on one Node process (SQLite)', () => {
  it('runs a shuffled burst of five events per pod for 50 pods in each pod\'s order, one run at a time', { timeout: 60_000 }, async () => {
    const r = start();
    const sends = Array.from({ length: 50 }, (_, p) => Array.from({ length: 5 }, (_, i) => ({ pod: `pod-${p}`, at: BASE + i * 1000 }))).flat();
    for (let i = sends.length - 1; i > 0; i--) {
      const j = Math.floor(Math.random() * (i + 1));
      [sends[i], sends[j]] = [sends[j]!, sends[i]!];
    }
    const started = Date.now();
    await Promise.all(sends.map((s) => post(r, 'pod.status.changed', { pod: { id: s.pod }, occurred_at: iso(s.at) })));
    // The burst must land within the hold (2 s) for its order to be guaranteed.
    expect(Date.now() - started).toBeLessThan(2000);
    await settled(r, 250);
    for (let p = 0; p < 50; p++) {
      for (const handler of ['syncPod', 'latestStatus']) {
        const runs = runsOf(handler, `pod-${p}`);
        expect(runs.map((x) => x.at)).toEqual([0, 1, 2, 3, 4].map((i) => BASE + i * 1000));
        expect(runs.every((x) => !x.stale && x.ok)).toBe(true);
        expectInOrderWithoutOverlap(runs);
      }
    }
    // The unordered handler ran every delivery, without waiting for the hold.
    expect(orderedRuns().filter((x) => x.handler === 'notify')).toHaveLength(250);
  });

  it('holds a pod behind its failing first event, which runs again until it succeeds; another pod goes on meanwhile', { timeout: 60_000 }, async () => {
    const r = start({ ORDER_HOLD_MS: '200', ADMIN_TOKEN });
    const a1 = await post(r, 'pod.created', { pod: { id: 'pod-a' }, occurred_at: iso(BASE), fail_times: 2 });
    const a2 = await post(r, 'pod.active', { pod: { id: 'pod-a' }, occurred_at: iso(BASE + 1000) });
    await post(r, 'pod.destroyed', { pod: { id: 'pod-a' }, occurred_at: iso(BASE + 2000) });
    for (let i = 0; i < 3; i++) await post(r, 'pod.active', { pod: { id: 'pod-b' }, occurred_at: iso(BASE + i * 1000) });
    // While the first one fails and waits for its retry, the later ones say what they wait for.
    await vi.waitFor(async () => expect((await r.store.get(a1))?.status).toBe('failed'), { timeout: 10_000, interval: 20 });
    const rows = await r.store.list({ limit: 10 });
    const waits = await readOrderWaits(r.store, rows);
    expect(waitingOnOf(waits.get(a2))).toBe(a1);
    expect(deliveryJson(rows.find((d) => d.eventId === a2)!, waitingOnOf(waits.get(a2)))).toMatchObject({ status: 'queued', waiting_on: a1 });
    // The admin API and the inspector say the same.
    const auth = { authorization: `Bearer ${ADMIN_TOKEN}` };
    const record = (await (await r.app.request(`/_podhook/api/deliveries/${a2}`, { headers: auth })).json()) as Record<string, unknown>;
    expect(record).toMatchObject({ waiting_on: a1, order: [{ handler: 'syncPod', key: 'pod-a', waiting_on: a1 }] });
    const page = await (await r.app.request(`/_podhook/deliveries/${a2}`, { headers: auth })).text();
    expect(page).toContain(`<a href="/_podhook/deliveries/${a1}"><code>${a1}</code></a>, which comes first`);
    await settled(r, 6);
    const a = runsOf('syncPod', 'pod-a');
    expect(a.map((x) => [x.id === a1 ? 'first' : 'later', x.attempt, x.ok])).toEqual([
      ['first', 1, false],
      ['first', 2, false],
      ['first', 3, true],
      ['later', 1, true],
      ['later', 1, true],
    ]);
    expectInOrderWithoutOverlap(a.filter((x) => x.ok));
    const b = runsOf('syncPod', 'pod-b');
    expect(b).toHaveLength(3);
    expectInOrderWithoutOverlap(b);
    // pod-b did not wait for pod-a's retries.
    expect(b.at(-1)!.end).toBeLessThan(a[2]!.start);
    expect((await r.store.get(a1))!).toMatchObject({ status: 'processed', attempts: 3 });
  });

  it('runs an event older than one already run as stale (stale: run), or records it skipped (stale: skip)', { timeout: 30_000 }, async () => {
    const r = start({ ORDER_HOLD_MS: '0' });
    const newer = await post(r, 'pod.status.changed', { pod: { id: 'pod-c' }, occurred_at: iso(BASE + 10_000) });
    await settled(r, 1);
    const older = await post(r, 'pod.status.changed', { pod: { id: 'pod-c' }, occurred_at: iso(BASE + 5_000) });
    await settled(r, 2);
    const sync = runsOf('syncPod', 'pod-c');
    expect(sync.map((x) => [x.id, x.stale, x.newest])).toEqual([
      [newer, false, null],
      [older, true, newer],
    ]);
    // latestStatus skips it: not run, recorded as skipped for the newer event.
    expect(runsOf('latestStatus', 'pod-c').map((x) => x.id)).toEqual([newer]);
    const ledger = await r.store.handlerRuns([older]);
    expect(ledger.find((x) => x.handler === 'latestStatus')).toMatchObject({ status: 'skipped', lastError: `stale: skipped, newer event ${newer} already ran` });
    const history = await r.store.handlerAttempts([older]);
    expect(history.find((x) => x.handler === 'latestStatus')).toMatchObject({ outcome: 'skipped' });
    expect(await r.store.get(older)).toMatchObject({ status: 'processed', lastError: `latestStatus: stale: skipped, newer event ${newer} already ran` });
    const metrics = await (await r.app.request('/metrics')).text();
    expect(metrics).toContain('podhook_order_stale_total{action="run",handler="syncPod"} 1');
    expect(metrics).toContain('podhook_order_stale_total{action="skip",handler="latestStatus"} 1');
    expect(metrics).toContain('podhook_order_waiting{handler="syncPod"} 0');
    expect(metrics).toMatch(/podhook_order_oldest_wait_seconds\{handler="latestStatus"\} 0/);
  });
});

describe("order: 'pod' at start", () => {
  const registry = (name: string) => fileURLToPath(new URL(`../fixtures/registries/${name}.ts`, import.meta.url));

  it('stops podhook serve with exit code 2 and one line when the pod id and event time are neither learned nor named', async () => {
    const result = await runCli(['serve', '--handlers', registry('order-by-pod')], { DATABASE_PATH: dbIn(tempDir()), SVC_WEBHOOK_SECRET: TEST_SECRET, PORT: '0' });
    expect(result.code).toBe(2);
    const lines = result.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/handler syncByPod: order: 'pod' needs the pod id and event time fields of .*export const orderFields/);
  });

  it('runs with the fields the registry names (orderFields)', { timeout: 30_000 }, async () => {
    const r = createNodeRuntime({
      config: parseConfig({ DATABASE_PATH: dbIn(tempDir()), SVC_WEBHOOK_SECRET: TEST_SECRET, ORDER_HOLD_MS: '0' }),
      logger: silentLogger,
      handlers: (await import(registry('order-by-pod-named'))).handlers,
      payloads: { orderFields: { podId: 'pod.id', occurredAt: 'occurred_at' } },
    });
    runtime = r;
    r.startBackground();
    await post(r, 'pod.created', { pod: { id: 'pod-n' }, occurred_at: iso(BASE) });
    await settled(r, 1);
    const rows = await r.store.list({ limit: 1 });
    expect(rows[0]).toMatchObject({ status: 'processed' });
    // Its place in pod-n's order was stored with the claim and settled.
    expect(await r.store.orderStats()).toEqual([]);
  });
});
