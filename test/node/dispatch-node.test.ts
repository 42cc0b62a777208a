import { once } from 'node:events';
import { afterEach, describe, expect, it, onTestFailed, vi } from 'vitest';
import { defineHandler } from '../../src/index.js';
import { parseConfig } from '../../src/core/config.js';
import { startServer, type RunningServer } from '../../src/node/serve.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { captureLogger } from '../helpers/capture-logger.js';
import { openNodeTarget } from '../helpers/node-target.js';
import { FIXED_NOW_MS, signDelivery, TEST_SECRET, toRequest } from '../helpers/sign.js';
import { spawnServer } from '../helpers/spawn-podhook.js';
import { dbIn, useTempDir } from '../helpers/temp-dir.js';

const tempDir = useTempDir();
const servers: RunningServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close(100);
});
const nowS = () => Math.floor(Date.now() / 1000);
const post = (url: string, d: ReturnType<typeof signDelivery>) =>
  fetch(`${url}/webhooks`, { method: 'POST', headers: d.headers, body: d.body });

describe('dispatch in the Node service', () => {
  it('answers the sender before the handler finishes, then processes in the background', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let started = false;
    const slow = defineHandler('pod.created', { name: 'slow' }, async () => {
      started = true;
      await gate;
    });
    const config = parseConfig({ DATABASE_PATH: dbIn(tempDir()), SVC_WEBHOOK_SECRET: TEST_SECRET, PORT: '0', HOST: '127.0.0.1' });
    const server = await startServer({ config, logger: captureLogger().logger, handlers: [slow] });
    servers.push(server);
    const d = signDelivery({ t: nowS() });
    const res = await post(server.url, d);
    expect(res.status).toBe(200);
    await vi.waitFor(() => expect(started, 'handler started').toBe(true), { timeout: 5000 });
    expect((await server.runtime.store.get(d.eventId))!.status).toBe('queued');
    release();
    await vi.waitFor(async () => expect((await server.runtime.store.get(d.eventId))!.status === 'processed', 'processed').toBe(true), { timeout: 5000 });
  });

  it('processes after a restart what was committed but not dispatched (kill -9 in between)', async () => {
    const path = dbIn(tempDir());
    const env = { DATABASE_PATH: path, SVC_WEBHOOK_SECRET: TEST_SECRET };
    const ingestOnly = await spawnServer({ ...env, DISPATCHER: 'off' });
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) {
      const d = signDelivery({ t: nowS(), eventType: i % 2 ? 'pod.created' : 'pod.backup.failed' });
      expect((await post(ingestOnly.url, d)).status).toBe(200);
      ids.push(d.eventId);
    }
    ingestOnly.child.kill('SIGKILL');
    await once(ingestOnly.child, 'exit');

    const restarted = await spawnServer(env);
    const { store, close } = openSqliteStore(path);
    await vi.waitFor(async () => expect((await store.list({ status: 'processed' })), 'all processed').toHaveLength(10), { timeout: 10_000 });
    close();
    restarted.child.kill('SIGTERM');
    await once(restarted.child, 'close'); // after its output is read to the end, not only its exit
    const runs = [...ingestOnly.output().split('\n'), ...restarted.output().split('\n')]
      .filter((l) => l.includes('"msg":"handler run"'))
      .map((l) => JSON.parse(l) as { event_id: string; handler: string; outcome: string })
      .filter((r) => r.handler === 'recordAll'); // the fixture's catch-all: one run per delivery
    expect(runs.map((r) => r.event_id).sort()).toEqual([...ids].sort());
    expect(runs.every((r) => r.outcome === 'succeeded')).toBe(true);
  });

  it('brings every acknowledged delivery to processed after a kill -9 at a random moment', async () => {
    // KILL_SEED=<n> repeats a run: the seed picks the moment and is printed when the test fails.
    const seed = Number(process.env.KILL_SEED ?? Math.floor(Math.random() * 2 ** 31));
    // The moment as progress, not time: the kill comes once this many deliveries are acknowledged
    // (6 to 185: about 0 to 300 ms of sending on a 2-core machine), however fast the machine is.
    const killAt = 6 + (seed % 180);
    onTestFailed(() => console.error(`kill -9 test: seed ${seed} (repeat with KILL_SEED=${seed})`));
    const path = dbIn(tempDir());
    // Short leases (as the replica tests' FAST_LEASES: 3 s, a look for due work every 100 ms): what
    // the killed process had leased is taken over 3 s after the kill, not the default 15 s. One
    // process runs at a time, so a lease a starved pause lost is taken again by that same process:
    // the test asks that every acknowledged delivery ends processed, not that a handler ran once.
    const env = { DATABASE_PATH: path, SVC_WEBHOOK_SECRET: TEST_SECRET, LEASE_MS: '3000', DISPATCH_POLL_MS: '100' };
    const first = await spawnServer(env);
    const acked: string[] = [];
    let stop = false;
    const senders = Array.from({ length: 8 }, async () => {
      while (!stop) {
        const d = signDelivery({ t: nowS() });
        try {
          if ((await post(first.url, d)).status === 200) acked.push(d.eventId);
        } catch {
          return;
        }
      }
    });
    await vi.waitFor(() => expect(acked.length, 'acknowledged deliveries before the kill').toBeGreaterThanOrEqual(killAt), { timeout: 15_000, interval: 5 });
    first.child.kill('SIGKILL');
    stop = true;
    await once(first.child, 'exit');
    await Promise.all(senders);

    const second = await spawnServer(env);
    const { store, close } = openSqliteStore(path);
    await vi.waitFor(async () => {
      const processed = new Set((await store.list({ status: 'processed', limit: 100_000 })).map((d) => d.eventId));
      expect(acked.every((id) => processed.has(id)), 'every acknowledged delivery processed').toBe(true);
    }, { timeout: 20_000 });
    close();
    second.child.kill('SIGTERM');
    await once(second.child, 'exit');
    expect(acked.length).toBeGreaterThan(5);
  }, 40_000);

  it('serves Prometheus metrics: deliveries, verification failures, handler runs, queue depth, dead letters', async () => {
    const failing = defineHandler('pod.created', { name: 'failing' }, () => {
      throw new Error('down');
    });
    const target = openNodeTarget(tempDir(), { secrets: [TEST_SECRET] }, { handlers: [failing] });
    target.setNow(FIXED_NOW_MS);
    await target.fetch(toRequest(signDelivery()));
    await target.fetch(toRequest(signDelivery({ secret: 'wrong' })));
    await target.fetch(toRequest(signDelivery({ body: 'not json' })));
    await target.fetch(toRequest(signDelivery({ eventType: 'pod.unheard.of' })));
    await target.runtime.dispatcher.runUntilIdle();
    const res = await target.fetch(new Request('http://podhook.test/metrics'));
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await res.text();
    expect(text).toContain('podhook_deliveries_total{event_type="pod.created",outcome="accepted"} 1');
    expect(text).toContain('podhook_deliveries_total{event_type="other",outcome="ignored"} 1');
    expect(text).toContain('podhook_deliveries_total{event_type="pod.created",outcome="dead"} 1');
    expect(text).toContain('podhook_verification_failures_total{reason="signature_mismatch"} 1');
    expect(text).toContain('podhook_queue_depth{status="failed"} 1');
    expect(text).toContain('podhook_handler_runs_total{handler="failing",outcome="failed"} 1');
    expect(text).toContain('podhook_handler_failures_total{handler="failing"} 1');
    expect(text).toContain('podhook_dispatch_lag_seconds_count 1');
    expect(text).toContain('podhook_dead_letters 1');
    expect(text).toMatch(/podhook_ingest_duration_seconds_count 4/);
    await target.close();
  });

  it('prunes processed rows after RETENTION_DAYS and keeps dead ones', async () => {
    const target = openNodeTarget(tempDir(), { secrets: [TEST_SECRET] }, { handlers: [defineHandler('pod.created', { name: 'ok' }, () => {})] });
    target.setNow(FIXED_NOW_MS);
    const kept = signDelivery({ body: '' });
    const done = signDelivery();
    await target.fetch(toRequest(kept));
    await target.fetch(toRequest(done));
    await target.runtime.dispatcher.runUntilIdle();
    expect((await target.store.get(done.eventId))!.status).toBe('processed');
    target.setNow(FIXED_NOW_MS + 29 * 86_400_000);
    expect(await target.runtime.prune()).toBe(0);
    target.setNow(FIXED_NOW_MS + 30 * 86_400_000 + 1);
    expect(await target.runtime.prune()).toBe(1);
    expect(await target.store.get(done.eventId)).toBeNull();
    expect((await target.store.get(kept.eventId))!.status).toBe('dead');
    await target.close();
  });
});
