// Three `podhook serve` replicas on one PostgreSQL database (issue 21): load spread over them,
// one killed with SIGKILL in the middle of its handlers and restarted, and secrets added and
// removed with the CLI while they run.
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SLOW_POD_NAME } from '../fixtures/replica-handlers.js';
import { REPLICA_REGISTRY } from '../fixtures/registry-paths.js';
import { freshDatabaseUrl } from '../helpers/postgres.js';
import {
  FAST_LEASES as FAST,
  killHard,
  missingCompletions,
  overlappingRuns,
  readRuns,
  replicaPool,
  runIntervals,
  send,
  storedRows,
  waitAllProcessed,
  waitReady,
  type Answer,
} from '../helpers/replicas.js';
import { signDelivery, TEST_SECRET, type SignedDelivery } from '../helpers/sign.js';
import { runCli, type ServerProcess } from '../helpers/spawn-podhook.js';
import { useTempDir } from '../helpers/temp-dir.js';

const pool = replicaPool();
const tempDir = useTempDir('podhook-replicas-');
afterEach(() => pool.stopAll());

const delivery = (slow = false, secret = TEST_SECRET) =>
  signDelivery({ t: Math.floor(Date.now() / 1000), secret, body: { pod: { id: randomUUID(), name: slow ? SLOW_POD_NAME : 'demo', status: 'provisioning' } } });

async function startReplicas(n: number, env: Record<string, string>): Promise<ServerProcess[]> {
  const replicas = await Promise.all(Array.from({ length: n }, () => pool.start(env, { handlers: REPLICA_REGISTRY })));
  await waitReady(replicas.map((r) => r.url));
  return replicas;
}

describe('three podhook replicas on one PostgreSQL', () => {
  it('under load, with one replica killed (kill -9) mid-handler and restarted: every acknowledged delivery is stored once and processed, each handler ran to completion and never on two replicas at once', async () => {
    const url = await freshDatabaseUrl();
    const recordDir = tempDir();
    const env = { DATABASE_URL: url, SVC_WEBHOOK_SECRET: TEST_SECRET, RECORD_DIR: recordDir, ...FAST };
    const replicas = await startReplicas(3, env);
    const urls = replicas.map((r) => r.url);

    // Each delivery goes to one replica (every 5th a slow one), every 13th to all three at once.
    const makePlan = (n: number) => Array.from({ length: n }, (_, i) => (i % 13 === 6 ? { d: delivery(), fanOut: true } : { d: delivery(i % 5 === 0), fanOut: false }));
    const answers: Answer[] = [];
    /** Six concurrent senders work through `plan`; `progress()` says how many deliveries they have taken. */
    function load(plan: { d: SignedDelivery; fanOut: boolean }[]) {
      let next = 0;
      async function sender() {
        while (next < plan.length) {
          const i = next++;
          const { d, fanOut } = plan[i]!;
          if (fanOut) {
            answers.push(...(await Promise.all(urls.map((u) => send(u, d)))));
            continue;
          }
          // As the service does, a delivery not acknowledged is sent again, here to the next replica.
          for (let attempt = 0; attempt < 6; attempt++) {
            const answer = await send(urls[(i + attempt) % urls.length]!, d);
            answers.push(answer);
            if (answer.status === 200) break;
          }
        }
      }
      return { done: Promise.all(Array.from({ length: 6 }, sender)), progress: () => next };
    }

    // Kill the third replica once a third of the first 200 are sent and one of its handlers is running.
    const during = makePlan(200);
    const first = load(during);
    const victim = replicas[2]!;
    const victimPid = victim.child.pid!;
    await vi.waitFor(
      () => {
        expect(first.progress()).toBeGreaterThan(during.length / 3);
        const open = runIntervals(readRuns(recordDir).filter((l) => l.pid === victimPid)).filter((r) => r.end === Infinity);
        expect(open.length).toBeGreaterThan(0);
      },
      { timeout: 30_000, interval: 5 },
    );
    const killedAt = await killHard(victim);
    const restarted = await pool.start({ ...env, PORT: new URL(victim.url).port }, { handlers: REPLICA_REGISTRY });
    expect(restarted.url).toBe(victim.url);
    await first.done;
    // Then 100 more with the three replicas up, the restarted one among them.
    await waitReady(urls);
    const after = makePlan(100);
    await load(after).done;
    const plan = [...during, ...after];

    const acked = new Set(answers.filter((a) => a.status === 200).map((a) => a.eventId));
    const sent = new Set(plan.map((p) => p.d.eventId));
    // Every single send was acknowledged in the end, by the replica it went to or a later one.
    expect(plan.filter((p) => !p.fanOut && !acked.has(p.d.eventId))).toEqual([]);
    // Deliveries never acknowledged (the connection to the killed replica reset) may or may
    // not be stored; whatever is stored was sent, and is processed like the rest.
    const rows = await waitAllProcessed(url, acked);
    expect(rows.filter((r) => !sent.has(r.event_id))).toEqual([]);
    expect(new Set(rows.map((r) => r.event_id)).size).toBe(rows.length);

    // An event id sent to the three at once: at most one answer says duplicate: false, and
    // exactly one when all three answered.
    const copiesOf = (p: { d: SignedDelivery }) => answers.filter((a) => a.eventId === p.d.eventId);
    for (const copies of plan.filter((p) => p.fanOut).map(copiesOf)) {
      const fresh = copies.filter((a) => a.status === 200 && a.duplicate === false);
      expect(fresh.length).toBeLessThanOrEqual(1);
      if (copies.every((a) => a.status === 200)) expect(fresh).toHaveLength(1);
    }
    // With the three up, every copy is acknowledged.
    for (const copies of after.filter((p) => p.fanOut).map(copiesOf)) expect(copies.map((a) => a.status)).toEqual([200, 200, 200]);

    // The handlers' own record: each ran to completion for every stored delivery, no run left
    // open on a live replica, and no two processes ran one handler on one event at once.
    const runs = runIntervals(readRuns(recordDir), new Map([[victimPid, killedAt]]));
    expect(missingCompletions(rows, runs)).toEqual([]);
    expect(runs.filter((r) => r.end === Infinity)).toEqual([]);
    expect(overlappingRuns(runs)).toEqual([]);
    // What the killed replica left mid-run was run again, to the end, by another process after the kill.
    const cutOff = runs.filter((r) => r.pid === victimPid && !r.completed && r.end === killedAt);
    expect(cutOff.length).toBeGreaterThan(0);
    for (const c of cutOff) {
      expect(runs.some((r) => r.id === c.id && r.handler === c.handler && r.pid !== victimPid && r.completed && r.start > killedAt)).toBe(true);
    }
  }, 90_000);

  it('accepts a secret added with `podhook secrets add` on every replica within seconds, and refuses it on every replica once removed', async () => {
    const url = await freshDatabaseUrl();
    const recordDir = tempDir();
    const replicas = await startReplicas(3, { DATABASE_URL: url, SVC_WEBHOOK_SECRET: TEST_SECRET, RECORD_DIR: recordDir, ...FAST });
    const secret = 'whsec_replicas_rotation_5c0d71';
    const refusedBefore = await Promise.all(replicas.map((r) => send(r.url, delivery(false, secret))));
    expect(refusedBefore.map((a) => a.status)).toEqual([401, 401, 401]);

    const added = await runCli(['secrets', 'add'], { DATABASE_URL: url }, `${secret}\n`);
    expect(added.code).toBe(0);
    await vi.waitFor(
      async () => {
        const answers = await Promise.all(replicas.map((r) => send(r.url, delivery(false, secret))));
        expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
      },
      { timeout: 3000, interval: 100 },
    );

    const listed = await runCli(['secrets', 'list', '--json'], { DATABASE_URL: url });
    expect(listed.code).toBe(0);
    const stored = (JSON.parse(listed.stdout) as { id: number | string; fingerprint: string }[]).at(-1)!;
    const removed = await runCli(['secrets', 'remove', String(stored.fingerprint)], { DATABASE_URL: url });
    expect(removed.code, removed.stderr).toBe(0);
    let refused: Answer[] = [];
    await vi.waitFor(
      async () => {
        refused = await Promise.all(replicas.map((r) => send(r.url, delivery(false, secret))));
        expect(refused.map((a) => a.status)).toEqual([401, 401, 401]);
      },
      { timeout: 3000, interval: 100 },
    );
    // The refused deliveries were not stored; the environment's secret still works on each.
    const ids = new Set((await storedRows(url)).map((r) => r.event_id));
    expect([...refusedBefore, ...refused].filter((a) => ids.has(a.eventId))).toEqual([]);
    const still = await Promise.all(replicas.map((r) => send(r.url, delivery())));
    expect(still.map((a) => a.status)).toEqual([200, 200, 200]);
  }, 60_000);
});
