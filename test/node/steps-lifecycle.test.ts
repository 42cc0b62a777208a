// Durable steps and the rest of a delivery's life (issue 36 §3), on a Node receiver in this process
// on SQLite and on PostgreSQL: retention never prunes a parked delivery, `podhook export` carries no
// step results, and a backfill of a handler starts its steps fresh. The step-handlers fixture keeps
// its side effects in this process's memory.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { startBackfill } from '../../src/core/backfill/start-backfill.js';
import { parseConfig } from '../../src/core/config.js';
import { defineHandler } from '../../src/core/events/define-handler.js';
import { silentLogger } from '../../src/core/observability/logger.js';
import { createNodeRuntime, type NodeRuntime } from '../../src/node/node-runtime.js';
import { loadStoreBackend } from '../../src/store/node-store.js';
import { handlers, resetStepNotes, stepNotes, stepReceipt } from '../fixtures/step-handlers.js';
import { freshDatabaseUrl } from '../helpers/postgres.js';
import { TEST_SECRET, type SignedDelivery } from '../helpers/sign.js';
import { runCli } from '../helpers/spawn-podhook.js';
import { stepDelivery } from '../helpers/step-server.js';
import { dbIn, useTempDir } from '../helpers/temp-dir.js';

const tempDir = useTempDir('podhook-steps-lifecycle-');
const runtimes: NodeRuntime[] = [];
afterEach(() => Promise.all(runtimes.splice(0).map((r) => r.close(1000))));

const DAY = 86_400_000;
const byName = (...names: string[]) => handlers.filter((h) => names.includes(h.name));
/** Another handler of pod.backup.failed, without steps: a deploy that dropped `sleeper` keeps it. */
const alsoBackupFailed = defineHandler('pod.backup.failed', async function pageOnCall() {});

const BACKENDS = [
  { name: 'SQLite', database: async () => ({ DATABASE_PATH: dbIn(tempDir()) }) },
  { name: 'PostgreSQL', database: async () => ({ DATABASE_URL: await freshDatabaseUrl() }) },
];

describe.each(BACKENDS)('durable steps and a delivery\'s life on $name', ({ database }) => {
  async function setup() {
    resetStepNotes();
    const db = await database();
    /** A receiver on that database with these handlers (a deploy), dispatching. */
    const start = async (list = handlers) => {
      const config = parseConfig({ ...db, SVC_WEBHOOK_SECRET: TEST_SECRET, DISPATCH_POLL_MS: '50', RETRY_BASE_MS: '60000', ORDER_HOLD_MS: '0' });
      await loadStoreBackend(config);
      const r = createNodeRuntime({ config, logger: silentLogger, handlers: list });
      runtimes.push(r);
      await r.storeReady;
      r.startBackground();
      return r;
    };
    const post = async (r: NodeRuntime, d: SignedDelivery) => expect((await r.app.request('/webhooks', { method: 'POST', headers: d.headers, body: d.body })).status).toBe(200);
    const settled = (r: NodeRuntime, id: string, status: string) =>
      vi.waitFor(async () => expect((await r.store.get(id))?.status).toBe(status), { timeout: 20_000, interval: 25 });
    const parked = (r: NodeRuntime, id: string) =>
      vi.waitFor(
        async () => {
          const [run] = await r.store.parkedRuns([id]);
          expect(run).toBeDefined();
          expect(await r.store.get(id)).toMatchObject({ status: 'queued', nextAttemptAt: run!.wakeAt });
          return run!;
        },
        { timeout: 20_000, interval: 25 },
      );
    const stop = async (r: NodeRuntime) => {
      runtimes.splice(runtimes.indexOf(r), 1);
      await r.close(1000);
    };
    /** A receiver with two deliveries: one parked for an hour after its first step, one processed. */
    const parkedAndProcessed = async () => {
      const r = await start();
      const sleeping = stepDelivery('pod.backup.failed', { sleep: '1h' });
      const done = stepDelivery('pod.created');
      await post(r, sleeping);
      await post(r, done);
      await parked(r, sleeping.eventId);
      await settled(r, done.eventId, 'processed');
      return { r, sleeping, done };
    };
    return { db, start, post, settled, parked, stop, parkedAndProcessed };
  }

  it('retention never prunes a parked delivery (nor its steps), however old; a processed one of the same age goes', async () => {
    const t = await setup();
    const { r, sleeping, done } = await t.parkedAndProcessed();
    // Every row is older than this cutoff: retention in a day's time.
    let removed = 0;
    for (let n; (n = await r.store.prune({ before: Date.now() + DAY, limit: 100 })) > 0; ) removed += n;
    expect(removed).toBe(1);
    expect(await r.store.get(done.eventId)).toBeNull();
    expect(await r.store.get(sleeping.eventId)).toMatchObject({ status: 'queued' });
    expect((await r.store.loadSteps(sleeping.eventId, 'sleeper')).map((s) => [s.name, s.state])).toEqual([['before', 'done'], ['nap', 'sleeping']]);
    expect(await r.store.parkedRuns([sleeping.eventId])).toMatchObject([{ handler: 'sleeper', step: 'nap' }]);
  });

  it('podhook export carries no step results, of a parked run or of a finished one', async () => {
    const t = await setup();
    const { r, sleeping, done } = await t.parkedAndProcessed();
    // The results are on record, with text found nowhere else.
    for (const [id, handler] of [[sleeping.eventId, 'sleeper'], [done.eventId, 'threeSteps']] as const) {
      expect((await r.store.loadSteps(id, handler))[0]!.result).toContain(stepReceipt(id));
    }
    const exported = await runCli(['export'], t.db);
    expect(exported.code).toBe(0);
    const lines = exported.stdout.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.map((l) => l.event_id).sort()).toEqual([sleeping.eventId, done.eventId].sort());
    expect(exported.stdout).not.toContain('receipt-of-step-one');
    // No field for steps either: the format's fields only.
    for (const line of lines) expect(Object.keys(line).filter((k) => /step/i.test(k))).toEqual([]);
  });

  it('a backfill of a handler starts its steps fresh: a run parked before a deploy dropped the handler does not resume from its old steps', { timeout: 60_000 }, async () => {
    const t = await setup();
    // Deploy 1: sleeper runs its first step and parks.
    const first = await t.start(byName('sleeper'));
    const d = stepDelivery('pod.backup.failed', { sleep: '1s' });
    await t.post(first, d);
    const run = await t.parked(first, d.eventId);
    await t.stop(first);
    // Deploy 2: sleeper is gone; the delivery's other handler runs at the wake, and it is processed.
    const second = await t.start([alsoBackupFailed]);
    await t.settled(second, d.eventId, 'processed');
    expect(Date.now()).toBeGreaterThanOrEqual(run.wakeAt);
    await t.stop(second);
    // Deploy 3: sleeper is back; a backfill runs it on what it missed, this delivery among them.
    const third = await t.start([...byName('sleeper'), alsoBackupFailed]);
    const backfilledAt = Date.now();
    const { backfill, plan } = await startBackfill(third.store, [...byName('sleeper'), alsoBackupFailed], { handler: 'sleeper', until: backfilledAt }, backfilledAt);
    expect(plan.counts).toMatchObject({ matching: 1, handled: 0 });
    third.backfills.wake();
    await vi.waitFor(async () => expect((await third.store.getBackfill(backfill.id))?.state).toBe('done'), { timeout: 20_000, interval: 25 });
    await vi.waitFor(() => expect(stepNotes().filter((n) => n.id === d.eventId).map((n) => n.what)).toContain('after'), { timeout: 20_000, interval: 25 });
    await t.settled(third, d.eventId, 'processed');

    const lines = stepNotes().filter((n) => n.id === d.eventId);
    // Fresh: its first step ran again, and its sleep slept again, from the backfill's run.
    expect(lines.map((n) => n.what)).toEqual(['before', 'before', 'after-sleep', 'after']);
    const woke = lines.find((n) => n.what === 'after-sleep')!;
    expect(woke.at).toBeGreaterThanOrEqual(backfilledAt + 1_000);
    const steps = await third.store.loadSteps(d.eventId, 'sleeper');
    expect(steps.map((s) => [s.name, s.state, s.attempts])).toEqual([['before', 'done', 1], ['nap', 'done', 1], ['after', 'done', 1]]);
    expect(steps[0]!.startedAt).toBeGreaterThanOrEqual(backfilledAt);
  });
});
