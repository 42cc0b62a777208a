// Ordered handlers on three `podhook serve` replicas sharing one PostgreSQL (issue 27): a burst
// posted out of order over the three, one replica killed with SIGKILL in the middle of an ordered
// run and started again. Every pod's runs keep its order and never overlap, across processes.
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ORDERED_REGISTRY } from '../fixtures/registry-paths.js';
import { freshDatabaseUrl } from '../helpers/postgres.js';
import { killHard, recordedRuns, replicaPool, send, STARVED_HOST_LEASES, waitAllProcessed, waitReady, type Answer } from '../helpers/replicas.js';
import { signDelivery, TEST_SECRET } from '../helpers/sign.js';
import { useTempDir } from '../helpers/temp-dir.js';

const pool = replicaPool();
const tempDir = useTempDir('podhook-order-replicas-');
afterEach(() => pool.stopAll());

const BASE = Date.UTC(2026, 10, 25, 12);
const PODS = 12;
const EVENTS = 5;

describe('ordered handlers on three replicas on one PostgreSQL', () => {
  it('keeps each pod\'s order with one run at a time across replicas, with one of them killed mid-run and restarted', { timeout: 120_000 }, async () => {
    const url = await freshDatabaseUrl();
    const file = join(tempDir(), 'runs.jsonl');
    // A run twice on live replicas fails the test, so neither a time limit nor a lease lost to a
    // starved host's pause may end one: only the kill does (with FAST_LEASES' 2 s limit and 3 s
    // lease, a busy host did both). And an event that arrives more than ORDER_HOLD_MS after a later
    // one of its pod runs after it, stale: the burst below, sent at once, took 6 to 7.5 s to be
    // answered on a starved host, and one pod's events arrived 3.2 s apart (the default is 2 s).
    const env = { DATABASE_URL: url, SVC_WEBHOOK_SECRET: TEST_SECRET, RECORD_FILE: file, ORDER_HOLD_MS: '8000', ...STARVED_HOST_LEASES };
    const replicas = await Promise.all(Array.from({ length: 3 }, () => pool.start(env, { handlers: ORDERED_REGISTRY })));
    const urls = replicas.map((r) => r.url);
    await waitReady(urls);

    const sends = Array.from({ length: PODS }, (_, p) => Array.from({ length: EVENTS }, (_, i) => ({ pod: `pod-${p}`, at: BASE + i * 1000 }))).flat();
    for (let i = sends.length - 1; i > 0; i--) {
      const j = Math.floor(Math.random() * (i + 1));
      [sends[i], sends[j]] = [sends[j]!, sends[i]!];
    }
    const t = Math.floor(Date.now() / 1000);
    const deliveries = sends.map((s) =>
      signDelivery({ t, eventType: 'pod.status.changed', body: { pod: { id: s.pod }, occurred_at: new Date(s.at).toISOString(), work_ms: 150 } }),
    );
    const victim = replicas[1]!;
    const victimPid = victim.child.pid!;
    // Watched from the first send: on a slow machine the burst's runs can be over before the last
    // answer comes back.
    const runOnVictim = vi.waitFor(
      () => {
        const open = recordedRuns(file, 'syncPod').filter((r) => r.pid === victimPid && r.end === Infinity);
        expect(open.length, 'an ordered run in progress on the victim').toBeGreaterThan(0);
      },
      { timeout: 30_000, interval: 5 },
    );
    // Spread over the replicas; a delivery not acknowledged goes again to the next one, as the
    // sender would (the victim killed meanwhile included).
    const answers: Answer[] = [];
    const sending = Promise.all(
      deliveries.map(async (d, i) => {
        for (let attempt = 0; attempt < 6; attempt++) {
          const answer = await send(urls[(i + attempt) % urls.length]!, d);
          answers.push(answer);
          if (answer.status === 200) break;
        }
      }),
    );
    await runOnVictim;
    const killedAt = await killHard(victim);
    const restarted = await pool.start({ ...env, PORT: new URL(victim.url).port }, { handlers: ORDERED_REGISTRY });
    await waitReady([restarted.url]);
    await sending;

    const acked = new Set(answers.filter((a) => a.status === 200).map((a) => a.eventId));
    expect(deliveries.filter((d) => !acked.has(d.eventId)).map((d) => d.eventId)).toEqual([]);
    await waitAllProcessed(url, acked, 60_000);

    const runs = recordedRuns(file, 'syncPod', new Map([[victimPid, killedAt]]));
    for (let p = 0; p < PODS; p++) {
      const pod = runs.filter((r) => r.pod === `pod-${p}`).sort((a, b) => a.start - b.start);
      // One at a time: each run of the pod starts after the one before it ended (a killed one at its kill).
      for (let i = 1; i < pod.length; i++) {
        expect(pod[i]!.start, `pod-${p}: run ${i} (pid ${pod[i]!.pid}) overlaps run ${i - 1} (pid ${pod[i - 1]!.pid})`).toBeGreaterThanOrEqual(pod[i - 1]!.end);
      }
      // In order: the runs that completed went earliest event first, none stale.
      const completed = pod.filter((r) => r.completed);
      expect(completed.map((r) => r.at), `pod-${p}`).toEqual([...completed.map((r) => r.at)].sort((a, b) => a - b));
      expect(completed.every((r) => !r.stale)).toBe(true);
      // Every event ran to completion; twice only when the first run was on the killed replica
      // (it finished, but was killed before its outcome was recorded: at-least-once).
      for (const d of new Set(pod.map((r) => r.id))) {
        const done = completed.filter((r) => r.id === d);
        expect(done.length, `${d} completed`).toBeGreaterThanOrEqual(1);
        expect(done.filter((r) => r.pid !== victimPid).length, `${d} completed on live replicas`).toBeLessThanOrEqual(1);
      }
    }
    expect(new Set(runs.filter((r) => r.completed).map((r) => r.id)).size).toBe(PODS * EVENTS);
  });
});
