// ctx.waitForEvent across processes (issue 48 §2): `podhook serve` killed with SIGKILL while runs
// wait, then started again on the same SQLite file; two replicas on one PostgreSQL, the match
// ingested on one waking the run parked by the other, exactly once. The wait-handlers fixture
// appends each run that got past its wait, with its process id, to one $RECORD_FILE.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { DeliveryStore } from '../../src/core/delivery-store.js';
import { openPostgresStore } from '../../src/store/postgres/open-postgres.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { WAIT_REGISTRY } from '../fixtures/registry-paths.js';
import type { WaitNote } from '../fixtures/wait-handlers.js';
import { ATTR, SPAN } from '../../src/core/tracing/names.js';
import { startOtlpReceiver } from '../helpers/otlp-receiver.js';
import { freshDatabaseUrl } from '../helpers/postgres.js';
import { FAST_LEASES, killHard, replicaPool, send, waitReady } from '../helpers/replicas.js';
import { signDelivery, TEST_SECRET } from '../helpers/sign.js';
import { dbIn, useTempDir } from '../helpers/temp-dir.js';

const pool = replicaPool();
const tempDir = useTempDir('podhook-wait-processes-');
const closers: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  await pool.stopAll();
  for (const c of closers.splice(0)) await c();
});

const now = () => Math.floor(Date.now() / 1000);
const failed = (pod: string) => signDelivery({ t: now(), eventType: 'pod.renewal_failed', body: { pod: { id: pod }, n: randomUUID() } });
const renewed = (pod: string) => signDelivery({ t: now(), eventType: 'pod.renewed', body: { pod: { id: pod }, n: randomUUID() } });

function notesIn(file: string): WaitNote[] {
  try {
    return readFileSync(file, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as WaitNote);
  } catch {
    return [];
  }
}

/** Resolves once the run is parked at its wait until its timeout (its early look done). */
const parked = (store: DeliveryStore, id: string) =>
  vi.waitFor(
    async () => {
      const [wait] = await store.waitsOf([id]);
      expect(wait).toBeDefined();
      expect((await store.parkedRuns([id]))[0]?.wakeAt).toBe(wait!.untilAt);
      expect((await store.get(id))?.nextAttemptAt).toBe(wait!.untilAt);
    },
    { timeout: 20_000, interval: 25 },
  );

const processed = (store: DeliveryStore, id: string) => vi.waitFor(async () => expect((await store.get(id))?.status).toBe('processed'), { timeout: 30_000, interval: 50 });

describe('waits across processes', () => {
  it('kill -9 while runs wait on SQLite: started again, the match wakes each run once', { timeout: 60_000 }, async () => {
    const dir = tempDir();
    const record = join(dir, 'waits.jsonl');
    const env = { DATABASE_PATH: dbIn(dir), SVC_WEBHOOK_SECRET: TEST_SECRET, RECORD_FILE: record, HANDLER_THREADS: '1', DISPATCH_POLL_MS: '100' };
    const first = await pool.start(env, { handlers: WAIT_REGISTRY });
    const opened = openSqliteStore(dbIn(dir));
    closers.push(() => opened.close());
    const pod = randomUUID();
    const waiting = [failed(pod), failed(pod)];
    for (const d of waiting) expect((await send(first.url, d)).status).toBe(200);
    for (const d of waiting) await parked(opened.store, d.eventId);
    await killHard(first);

    const second = await pool.start(env, { handlers: WAIT_REGISTRY });
    const match = renewed(pod);
    expect((await send(second.url, match)).status).toBe(200);
    for (const d of waiting) await processed(opened.store, d.eventId);
    const notes = notesIn(record);
    expect(notes.map((n) => [n.id, n.got, n.pid]).sort()).toEqual(waiting.map((d) => [d.eventId, match.eventId, second.child.pid]).sort());
    expect(await opened.store.waitsOf(waiting.map((d) => d.eventId))).toEqual([]);
  });

  it('two PostgreSQL replicas: the match ingested on one wakes the run parked by the other, exactly once', { timeout: 90_000 }, async () => {
    const url = await freshDatabaseUrl();
    const record = join(tempDir(), 'waits.jsonl');
    const env = { DATABASE_URL: url, SVC_WEBHOOK_SECRET: TEST_SECRET, RECORD_FILE: record, HANDLER_THREADS: '1', ...FAST_LEASES };
    const [a, b] = await Promise.all([0, 1].map(() => pool.start(env, { handlers: WAIT_REGISTRY })));
    await waitReady([a!.url, b!.url]);
    const { store, close } = await openPostgresStore(url);
    closers.push(close);
    const pod = randomUUID();
    const waiting = failed(pod);
    expect((await send(a!.url, waiting)).status).toBe(200);
    await parked(store, waiting.eventId);
    // Parked by the replica that took it (a hand-off runs where it was received).
    const match = renewed(pod);
    expect((await send(b!.url, match)).status).toBe(200);
    await processed(store, waiting.eventId);
    const notes = notesIn(record);
    expect(notes.map((n) => [n.id, n.got])).toEqual([[waiting.eventId, match.eventId]]);
    // Woken by the match's ingest, not by its timeout (an hour away) nor by a poll.
    const attempts = await store.handlerAttempts([waiting.eventId]);
    expect(attempts.map((h) => h.outcome)).toEqual(['parked', 'parked', 'succeeded']);
    expect(attempts.at(-1)!.at - attempts.at(-2)!.at).toBeLessThan(60_000);
  });

  it('a trace links the wait to the receipt of the delivery that ended it', { timeout: 60_000 }, async () => {
    const otlp = await startOtlpReceiver();
    closers.push(() => otlp.close());
    const dir = tempDir();
    const env = { DATABASE_PATH: dbIn(dir), SVC_WEBHOOK_SECRET: TEST_SECRET, HANDLER_THREADS: '1', DISPATCH_POLL_MS: '100', OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_BSP_SCHEDULE_DELAY: '50', OTEL_TRACES_SAMPLER: 'always_on' };
    const server = await pool.start(env, { handlers: WAIT_REGISTRY });
    const opened = openSqliteStore(dbIn(dir));
    closers.push(() => opened.close());
    const pod = randomUUID();
    const waiting = failed(pod);
    expect((await send(server.url, waiting)).status).toBe(200);
    await parked(opened.store, waiting.eventId);
    const match = renewed(pod);
    expect((await send(server.url, match)).status).toBe(200);
    await processed(opened.store, waiting.eventId);
    const receipt = () => otlp.named('POST /webhooks').find((s) => s.attributes[ATTR.eventId] === match.eventId);
    const waits = () => otlp.named(SPAN.step).filter((s) => s.attributes[ATTR.step] === 'renewed');
    // The first run and its early look found nothing: no link; the woken run's wait links the match's receipt.
    await vi.waitFor(() => expect(waits().filter((s) => s.links.length > 0)).toHaveLength(1), { timeout: 15_000, interval: 50 });
    await vi.waitFor(() => expect(receipt()).toBeDefined(), { timeout: 15_000, interval: 50 });
    const linked = waits().find((s) => s.links.length > 0)!;
    expect(linked.links).toEqual([{ traceId: receipt()!.traceId, spanId: receipt()!.spanId }]);
    expect(waits().length).toBeGreaterThanOrEqual(2);
  });
});
