// ctx.waitForEvent on `podhook serve` in this process (SQLite file, HTTP on 127.0.0.1): a run
// parked until a later delivery about its pod arrives, or its timeout passes (issue 48 §2).
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { parseConfig } from '../../src/core/config.js';
import { silentLogger } from '../../src/core/observability/logger.js';
import { startServer, type RunningServer } from '../../src/node/serve.js';
import { loadValidRegistry } from '../../src/node/handler-registry.js';
import { runMain } from '../cli/run-main.js';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { awaitRenewal, holds, resetWaitNotes, waitNotes, type WaitNote } from '../fixtures/wait-handlers.js';
import { WAIT_REGISTRY } from '../fixtures/registry-paths.js';
import { signDelivery, TEST_SECRET, type SignedDelivery } from '../helpers/sign.js';
import { dbIn, useTempDir } from '../helpers/temp-dir.js';

const tempDir = useTempDir('podhook-wait-for-event-');
const servers: RunningServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close(1000);
});

const ADMIN_TOKEN = 'admin-token-for-the-wait-test-0123456789';

const payloads = { orderFields: { podId: 'pod.id', occurredAt: null } };

/** `podhook serve` in this process with the wait-handlers fixture: in this thread, or (`threads`) in a handler thread loading its module. */
async function serve(path = dbIn(tempDir()), threads = 0) {
  const config = parseConfig({
    DATABASE_PATH: path,
    HANDLER_THREADS: String(threads),
    SVC_WEBHOOK_SECRET: TEST_SECRET,
    HOST: '127.0.0.1',
    PORT: '0',
    DISPATCH_POLL_MS: '50',
    ADMIN_TOKEN,
  });
  const loaded = threads > 0 ? await loadValidRegistry(WAIT_REGISTRY) : { handlers: [awaitRenewal], payloads, module: undefined };
  const server = await startServer({ config, logger: silentLogger, handlers: loaded.handlers, payloads: loaded.payloads, handlersModule: loaded.module });
  await server.handlersReady;
  servers.push(server);
  const store = server.runtime.store;
  const post = async (d: SignedDelivery) => {
    const res = await fetch(`${server.url}/webhooks`, { method: 'POST', headers: d.headers, body: d.body });
    expect(res.status).toBe(200);
    return (await res.json()) as { outcome?: string; duplicate?: boolean };
  };
  /**
   * Resolves once the delivery's run is parked at its wait until its timeout (queued, not leased,
   * its wait recorded, its early look of its own done): only a new delivery's wake runs it sooner.
   */
  const parked = (id: string) =>
    vi.waitFor(
      async () => {
        const [run] = await store.parkedRuns([id]);
        expect(run).toMatchObject({ handler: 'awaitRenewal', step: 'renewed' });
        const [wait] = await store.waitsOf([id]);
        expect(wait).toMatchObject({ handler: 'awaitRenewal', name: 'renewed', types: ['pod.renewed'] });
        expect((await store.get(id))?.nextAttemptAt).toBe(wait!.untilAt);
        expect(run!.wakeAt).toBe(wait!.untilAt);
        return { run: run!, wait: wait! };
      },
      { timeout: 10_000, interval: 20 },
    );
  const processed = (id: string, status = 'processed') => vi.waitFor(async () => expect((await store.get(id))?.status).toBe(status), { timeout: 10_000, interval: 20 });
  /** A pod.renewed delivery ran (no handler of its own here: ignored). */
  const ignored = (id: string) => processed(id, 'ignored');
  const get = (path: string) => fetch(`${server.url}/_podhook${path}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  const admin = (path: string, body: unknown) =>
    fetch(`${server.url}/_podhook/api${path}`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  /** A metric's value on /metrics (0 when it has no such line). */
  const metric = async (line: string) => {
    const text = await (await fetch(`${server.url}/metrics`)).text();
    const found = text.split('\n').find((l) => l.startsWith(`${line} `));
    return found === undefined ? 0 : Number(found.slice(line.length + 1));
  };
  return { server, store, post, parked, processed, ignored, admin, get, metric, path };
}

const now = () => Math.floor(Date.now() / 1000);
const failed = (pod: string, timeout?: number | string) => signDelivery({ t: now(), eventType: 'pod.renewal_failed', body: { pod: { id: pod }, n: randomUUID(), ...(timeout !== undefined && { timeout }) } });
const renewed = (pod: string) => signDelivery({ t: now(), eventType: 'pod.renewed', body: { pod: { id: pod }, n: randomUUID() } });

/** A pod.renewal_failed parked at its wait, then its match: resolves once the waiting run got it. */
async function waitAndMatch(s: Awaited<ReturnType<typeof serve>>, pod: string) {
  const waiting = failed(pod);
  await s.post(waiting);
  const parked = await s.parked(waiting.eventId);
  const match = renewed(pod);
  await s.post(match);
  await s.processed(waiting.eventId);
  return { waiting, match, parked };
}

afterEach(() => {
  resetWaitNotes();
  holds.clear();
});

/** What each run of the waiting handler got past its wait with, without the process id. */
const seenNow = () => waitNotes().map(({ pid: _, ...n }): Omit<WaitNote, 'pid'> => n);

describe('ctx.waitForEvent on SQLite', () => {
  it('a match that arrives before the timeout wakes the parked run, which gets it (typed, with its payload), and the wait is gone', async () => {
    const s = await serve();
    const pod = randomUUID();
    const { waiting, match, parked } = await waitAndMatch(s, pod);
    expect(parked.wait.podId).toBe(pod);
    // It was parked until its timeout (an hour), after its one early look: the match's ingest woke it.
    expect(parked.run.wakeAt).toBeGreaterThan(Date.now() + 59 * 60_000);
    expect(seenNow()).toEqual([{ id: waiting.eventId, got: match.eventId, type: 'pod.renewed', pod }]);
    expect(await s.store.waitsOf([waiting.eventId])).toEqual([]);
    // The match is recorded as the wait's step: the run links the event that woke it.
    const [step] = await s.store.stepsOf([waiting.eventId]);
    expect(step).toMatchObject({ name: 'renewed', kind: 'wait', state: 'done' });
    expect(JSON.parse(step!.result!).v).toMatchObject({ id: match.eventId, type: 'pod.renewed', payload: { pod: { id: pod } } });
  });

  it('seen: the admin API, the inspector and podhook deliveries show what a run waits for and until when, then the event that woke it', async () => {
    const s = await serve();
    const pod = randomUUID();
    const waiting = failed(pod);
    await s.post(waiting);
    const { wait } = await s.parked(waiting.eventId);
    const until = new Date(wait.untilAt).toISOString();
    const one = (await (await s.get(`/api/deliveries/${waiting.eventId}`)).json()) as { runs: { parked: unknown; steps: unknown[] }[] };
    expect(one.runs.at(-1)!.parked).toEqual({ step: 'renewed', wake_at: until, waiting_for: { types: ['pod.renewed'], pod_id: pod } });
    const list = (await (await s.get('/api/deliveries')).json()) as { deliveries: { event_id: string; parked: unknown }[] };
    expect(list.deliveries.find((r) => r.event_id === waiting.eventId)?.parked).toEqual({ handler: 'awaitRenewal', step: 'renewed', wake_at: until, waiting_for: { types: ['pod.renewed'], pod_id: pod } });
    const page = await (await s.get(`/deliveries/${waiting.eventId}`)).text();
    expect(page).toContain(`waiting at <code>renewed</code> for pod.renewed of pod <code>${pod}</code> until`);
    const inspectorList = await (await s.get('/')).text();
    expect(inspectorList).toContain(`title="waiting at &quot;renewed&quot; for pod.renewed until`);
    const cli = await runMain(['deliveries'], { DATABASE_PATH: s.path });
    expect(cli.code).toBe(0);
    const header = cli.stdout.split('\n')[0]!;
    expect(header).toMatch(/status .*wake_at .*waiting_for/);
    const row = cli.stdout.split('\n').find((l) => l.includes('pod.renewal_failed'))!;
    expect(row).toMatch(/ waiting /);
    expect(row).toContain(until);
    expect(row).toContain(`pod.renewed of ${pod.slice(0, 8)}`);
    expect(await s.metric('podhook_waiting_runs')).toBe(1);

    const match = renewed(pod);
    await s.post(match);
    await s.processed(waiting.eventId);
    const after = (await (await s.get(`/api/deliveries/${waiting.eventId}`)).json()) as { runs: { parked: unknown; steps: { name: string; matched_event_id: string | null }[] }[] };
    expect(after.runs.at(-1)!.parked).toBeNull();
    expect(after.runs.at(-1)!.steps).toMatchObject([{ name: 'renewed', kind: 'wait', state: 'done', matched_event_id: match.eventId }]);
    // The run links the delivery that woke it; its payload is not shown.
    const done = await (await s.get(`/deliveries/${waiting.eventId}`)).text();
    expect(done).toContain(`woken by <a href="/_podhook/deliveries/${match.eventId}">`);
    expect(JSON.stringify(after)).not.toContain('"payload"');
    expect(await s.metric('podhook_event_waits_total{outcome="woken"}')).toBe(1);
    expect(await s.metric('podhook_event_waits_total{outcome="matched"}')).toBe(1);
    expect(await s.metric('podhook_event_waits_total{outcome="timed_out"}')).toBe(0);
  });

  it('no match by the timeout: the wait resolves null, and a match arriving later changes nothing', async () => {
    const s = await serve();
    const pod = randomUUID();
    const waiting = failed(pod, 300);
    await s.post(waiting);
    await s.processed(waiting.eventId);
    expect(seenNow()).toEqual([{ id: waiting.eventId, got: null, type: undefined, pod: undefined }]);
    const late = renewed(pod);
    await s.post(late);
    await s.ignored(late.eventId);
    expect(seenNow()).toHaveLength(1);
    expect((await s.store.get(waiting.eventId))?.attempts).toBe(1);
    expect(await s.metric('podhook_event_waits_total{outcome="timed_out"}')).toBe(1);
    expect(await s.metric('podhook_event_waits_total{outcome="woken"}')).toBe(0);
  });

  it('a match received after the waiting delivery but before the wait began counts', async () => {
    const s = await serve();
    const pod = randomUUID();
    const waiting = failed(pod);
    let release!: () => void;
    holds.set(waiting.eventId, new Promise<void>((resolve) => (release = resolve)));
    await s.post(waiting);
    const match = renewed(pod);
    await s.post(match);
    // The match is stored before the run asks to wait: no wait exists yet to be woken.
    expect((await s.store.get(match.eventId))?.status).toBeDefined();
    expect(await s.store.waitsOf([waiting.eventId])).toEqual([]);
    release();
    await s.processed(waiting.eventId);
    expect(seenNow()).toEqual([{ id: waiting.eventId, got: match.eventId, type: 'pod.renewed', pod }]);
  });

  it('a match received before the waiting delivery is no match: the wait times out', async () => {
    const s = await serve();
    const pod = randomUUID();
    const earlier = renewed(pod);
    await s.post(earlier);
    await s.ignored(earlier.eventId);
    // Received at least a millisecond later than the match (only later deliveries match).
    const receivedAt = (await s.store.get(earlier.eventId))!.receivedAt;
    await vi.waitFor(() => expect(Date.now()).toBeGreaterThan(receivedAt));
    const waiting = failed(pod, 300);
    await s.post(waiting);
    await s.processed(waiting.eventId);
    expect(seenNow()).toEqual([{ id: waiting.eventId, got: null, type: undefined, pod: undefined }]);
  });

  it("two waiters on one pod are both woken by one match; a waiter on pod A is not woken by pod B's event", async () => {
    const s = await serve();
    const [a, b] = [randomUUID(), randomUUID()];
    const first = failed(a);
    const second = failed(a);
    const onB = failed(b);
    for (const d of [first, second, onB]) await s.post(d);
    for (const d of [first, second, onB]) await s.parked(d.eventId);
    const matchA = renewed(a);
    await s.post(matchA);
    await s.processed(first.eventId);
    await s.processed(second.eventId);
    expect(seenNow().map((x) => [x.id, x.got]).sort()).toEqual([[first.eventId, matchA.eventId], [second.eventId, matchA.eventId]].sort());
    // B's waiter still waits, unwoken, until its own pod's event.
    const { wait } = await s.parked(onB.eventId);
    expect(wait.wokenBy).toBeNull();
    const matchB = renewed(b);
    await s.post(matchB);
    await s.processed(onB.eventId);
    expect(seenNow().find((x) => x.id === onB.eventId)?.got).toBe(matchB.eventId);
  });

  it('a duplicate of the matching delivery wakes nothing twice, nor a wait that began after it', async () => {
    const s = await serve();
    const pod = randomUUID();
    const { waiting, match } = await waitAndMatch(s, pod);
    const before = await s.store.get(waiting.eventId);
    // A later failure of the same pod waits in its turn: its match must come after it.
    const next = failed(pod);
    await s.post(next);
    await s.parked(next.eventId);
    // The sender retries the matching delivery: a duplicate, stored once, and no run wakes for it.
    await s.post(match);
    await vi.waitFor(async () => expect((await s.store.get(match.eventId))?.deliveryCount).toBe(2), { timeout: 10_000, interval: 20 });
    // A pod.renewed of another pod runs after it: by then, the duplicate's wake would have run.
    const other = renewed(randomUUID());
    await s.post(other);
    await s.ignored(other.eventId);
    const { wait } = await s.parked(next.eventId);
    expect(wait.wokenBy).toBeNull();
    expect(seenNow()).toHaveLength(1);
    expect(await s.store.get(waiting.eventId)).toMatchObject({ status: 'processed', attempts: before!.attempts, processedAt: before!.processedAt });
  });

  it('a replay of the waiting delivery gets the recorded match back; replay with fresh waits again', async () => {
    const s = await serve();
    const pod = randomUUID();
    const { waiting, match } = await waitAndMatch(s, pod);
    // A later match exists now; the replay still gets the one recorded.
    const later = renewed(pod);
    await s.post(later);
    expect(await (await s.admin('/replay', { event_ids: [waiting.eventId] })).json()).toEqual({ replayed: 1 });
    await vi.waitFor(() => expect(seenNow()).toHaveLength(2), { timeout: 10_000, interval: 20 });
    expect(seenNow()[1]).toEqual({ id: waiting.eventId, got: match.eventId, type: 'pod.renewed', pod });
    expect(await s.store.waitsOf([waiting.eventId])).toEqual([]);
    // Its outcome recorded (a replay of a delivery a dispatcher still holds is refused).
    await s.processed(waiting.eventId);
    // Fresh: the wait runs again, and the first delivery received after the waiting one is its match again.
    const fresh = await s.admin('/replay', { event_ids: [waiting.eventId], fresh: true });
    expect(await fresh.json()).toEqual({ replayed: 1 });
    await vi.waitFor(() => expect(seenNow()).toHaveLength(3), { timeout: 10_000, interval: 20 });
    expect(seenNow()[2]).toEqual({ id: waiting.eventId, got: match.eventId, type: 'pod.renewed', pod });
  });

  it('podhook replay of the waiting delivery gets the recorded match back; --fresh looks again, and a run that waits again parks', async () => {
    const s = await serve();
    const pod = randomUUID();
    const { waiting, match } = await waitAndMatch(s, pod);
    const env = { DATABASE_PATH: s.path };
    const plain = await runMain(['replay', waiting.eventId, '--handlers', WAIT_REGISTRY], env);
    expect(plain.code).toBe(0);
    expect(seenNow()).toEqual([
      { id: waiting.eventId, got: match.eventId, type: 'pod.renewed', pod },
      { id: waiting.eventId, got: match.eventId, type: 'pod.renewed', pod },
    ]);
    // A delivery with no match yet: the replay's run waits (parked), and the server's dispatcher takes it from there.
    const other = failed(randomUUID());
    await s.post(other);
    await s.parked(other.eventId);
    const fresh = await runMain(['replay', '--fresh', other.eventId, '--handlers', WAIT_REGISTRY], env);
    expect(fresh.code).toBe(0);
    expect(fresh.stdout).toContain('waiting');
    expect((await s.store.waitsOf([other.eventId]))[0]).toMatchObject({ name: 'renewed', wokenBy: null });
    expect(seenNow()).toHaveLength(2);
  });

  it('a restart while runs wait: the match received by the new process wakes each run once', async () => {
    const first = await serve();
    const pod = randomUUID();
    const waiting = [failed(pod), failed(pod)];
    for (const d of waiting) await first.post(d);
    for (const d of waiting) await first.parked(d.eventId);
    await first.server.close(1000);
    servers.splice(servers.indexOf(first.server), 1);
    const second = await serve(first.path);
    const match = renewed(pod);
    await second.post(match);
    for (const d of waiting) await second.processed(d.eventId);
    expect(seenNow().map((x) => [x.id, x.got]).sort()).toEqual(waiting.map((d) => [d.eventId, match.eventId]).sort());
  });

  it('waitForEvent without a known pod place is a clear error at the call, naming podhook schemas and orderFields', async () => {
    const config = parseConfig({ DATABASE_PATH: dbIn(tempDir()), SVC_WEBHOOK_SECRET: TEST_SECRET, HOST: '127.0.0.1', PORT: '0', DISPATCH_POLL_MS: '50', DISPATCH_MAX_ATTEMPTS: '3' });
    const server = await startServer({ config, logger: silentLogger, handlers: [awaitRenewal] });
    servers.push(server);
    const waiting = failed(randomUUID());
    const res = await fetch(`${server.url}/webhooks`, { method: 'POST', headers: waiting.headers, body: waiting.body });
    expect(res.status).toBe(200);
    // Permanent: retrying cannot help until the place is named, so the delivery is dead at once.
    await vi.waitFor(async () => expect((await server.runtime.store.get(waiting.eventId))?.status).toBe('dead'), { timeout: 10_000, interval: 20 });
    const dead = await server.runtime.store.get(waiting.eventId);
    expect(dead?.attempts).toBe(1);
    expect(dead?.lastError).toContain('waitForEvent "renewed"');
    expect(dead?.lastError).toContain('podhook schemas');
    expect(dead?.lastError).toContain('orderFields');
    expect(await server.runtime.store.waitsOf([waiting.eventId])).toEqual([]);
  });
});

describe('ctx.waitForEvent in a handler thread', () => {
  it('the wait is asked of the receiver thread: parked, woken by the match, the match handed back into the thread', async () => {
    const dir = tempDir();
    const record = join(dir, 'waits.jsonl');
    process.env.RECORD_FILE = record;
    try {
      const s = await serve(dbIn(dir), 1);
      const pod = randomUUID();
      const { waiting, match } = await waitAndMatch(s, pod);
      const lines = readFileSync(record, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as WaitNote);
      expect(lines).toEqual([{ id: waiting.eventId, got: match.eventId, type: 'pod.renewed', pod, pid: process.pid }]);
    } finally {
      delete process.env.RECORD_FILE;
    }
  });
});
