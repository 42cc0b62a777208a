// A backfill on two `podhook serve` replicas sharing one PostgreSQL: the replica running it is
// killed with SIGKILL; the other takes it over once its lease ran out and finishes it from the
// cursor, with no delivery handed to the handler twice by the backfill.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { openPostgresStore } from '../../src/store/postgres/open-postgres.js';
import { ORDERED_REGISTRY } from '../fixtures/registry-paths.js';
import { freshDatabaseUrl } from '../helpers/postgres.js';
import { FAST_LEASES, killHard, recordedRuns, replicaPool, waitReady } from '../helpers/replicas.js';
import { historyDeliveries } from '../helpers/seed-history.js';
import { TEST_SECRET } from '../helpers/sign.js';
import { runCli } from '../helpers/spawn-podhook.js';
import { useTempDir } from '../helpers/temp-dir.js';

const pool = replicaPool();
const tempDir = useTempDir('podhook-backfill-pg-');
afterEach(() => pool.stopAll());

describe('backfill on two replicas on one PostgreSQL', () => {
  it('is taken over by the other replica when the one running it is killed, and finishes with each delivery run once', { timeout: 330_000 }, async () => {
    const url = await freshDatabaseUrl();
    const file = join(tempDir(), 'runs.jsonl');
    writeFileSync(file, '');
    const env = { DATABASE_URL: url, SVC_WEBHOOK_SECRET: TEST_SECRET, RECORD_FILE: file, ORDER_HOLD_MS: '0', ...FAST_LEASES };
    const replicas = [await pool.start(env, { handlers: ORDERED_REGISTRY }), await pool.start(env, { handlers: ORDERED_REGISTRY })];
    await waitReady(replicas.map((r) => r.url));

    const { store, close } = await openPostgresStore(url);
    try {
      const history = historyDeliveries({ count: 1_500, pods: 150, from: Date.now() - 20 * 86_400_000, workMs: 2 });
      for (let i = 0; i < history.length; i += 500) await store.importDeliveries(history.slice(i, i + 500));
      await vi.waitFor(async () => expect((await store.handlerRegistrations()).map((r) => r.handler)).toContain('syncPod'));
      const started = await runCli(['backfill', 'syncPod', '--handlers', ORDERED_REGISTRY], { DATABASE_URL: url });
      expect(started.code, started.stderr).toBe(0);
      const id = /Started backfill ([0-9a-f-]{36})/.exec(started.stdout)![1]!;

      // One replica holds it; once it has done some, it is killed.
      await vi.waitFor(async () => expect((await store.getBackfill(id))!.requeued).toBeGreaterThanOrEqual(300), { timeout: 120_000, interval: 50 });
      const holder = (await store.getBackfill(id))!.lease!.owner;
      const victim = replicas.find((r) => holder.includes(`pid${r.child.pid}-`))!;
      const survivor = replicas.find((r) => r !== victim)!;
      const victimPid = victim.child.pid!;
      const killedAt = await killHard(victim);
      const atKill = (await store.getBackfill(id))!;
      expect(atKill.state).toBe('running');

      await vi.waitFor(async () => expect((await store.getBackfill(id))!.lease?.owner ?? '').toContain(`pid${survivor.child.pid}-`), { timeout: 30_000, interval: 50 });
      const takenOver = (await store.getBackfill(id))!;
      expect(takenOver.step).toBeGreaterThanOrEqual(atKill.step);
      await vi.waitFor(async () => expect((await store.getBackfill(id))!.state).toBe('done'), { timeout: 120_000, interval: 250 });
      await vi.waitFor(async () => expect(await store.list({ status: 'queued', limit: 10 })).toEqual([]), { timeout: 60_000, interval: 250 });
      expect(await store.getBackfill(id)).toMatchObject({ requeued: 1_500, skipped: 0, total: 1_500 });

      const completed = recordedRuns(file, 'syncPod', new Map([[victimPid, killedAt]])).filter((r) => r.completed);
      const ids = new Set(history.map((d) => d.eventId));
      expect(new Set(completed.map((r) => r.id))).toEqual(ids);
      // Twice only around the kill: a run the killed replica finished before its outcome was recorded.
      const counts = new Map<string, number>();
      for (const r of completed) counts.set(r.id, (counts.get(r.id) ?? 0) + 1);
      const twice = [...counts].filter(([, n]) => n > 1).map(([eventId]) => eventId);
      for (const eventId of twice) {
        const runs = completed.filter((r) => r.id === eventId);
        expect(runs).toHaveLength(2);
        expect(runs.filter((r) => r.pid === victimPid && r.end <= killedAt)).toHaveLength(1);
      }
      expect(twice.length).toBeLessThanOrEqual(16);
      // The survivor ran the rest, and only the new handler ran on history.
      expect(completed.filter((r) => r.pid === survivor.child.pid).length).toBeGreaterThan(0);
      expect(recordedRuns(file, 'notify')).toEqual([]);
      expect((await store.list({ limit: 2_000 })).filter((d) => d.status !== 'processed')).toEqual([]);
    } finally {
      await close();
    }
  });
});
