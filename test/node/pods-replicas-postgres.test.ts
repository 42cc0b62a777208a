// Issue 37 §5 with handlers: three `podhook serve` replicas on one PostgreSQL, each running a
// handler that queues an action with ctx.pods inside a step, against the emulator counting 60
// writes per 4 s. The account's buckets in the store keep the three together: at most the first
// 429, every action queued once, no run dead; runs whose token is further off than their time
// left park and resume.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/start-emulator.js';
import { POD_ACTION_REGISTRY } from '../fixtures/registry-paths.js';
import { freshDatabaseUrl } from '../helpers/postgres.js';
import { replicaPool, send, waitAllProcessed, waitReady, type Answer } from '../helpers/replicas.js';
import { signDelivery, TEST_SECRET } from '../helpers/sign.js';

const KEY = 'svc_live_key_handler_replicas_01';
const DELIVERIES = 200;
const pool = replicaPool();
const emulators: RunningEmulator[] = [];
afterEach(async () => {
  await pool.stopAll();
  for (const e of emulators.splice(0)) await e.close();
});

/** The value of one labelled sample in a Prometheus text page (0 when absent). */
function sample(page: string, name: string, labels: string): number {
  const line = page.split('\n').find((l) => l.startsWith(`${name}{${labels}}`));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
}

async function query<T extends pg.QueryResultRow>(url: string, sql: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(sql)).rows;
  } finally {
    await client.end();
  }
}

describe('ctx.pods from handlers on three replicas of one PostgreSQL', () => {
  it('queues 200 actions, each once, within 60 writes per 4 s: at most the first 429, no run dead, runs parked on the bucket resume', async () => {
    // The service's write bucket, scaled down: 60 writes per 4 s window (fixed, from its first request).
    const emu = await startEmulator({ apiKey: KEY, seedPods: 4, writeLimit: 60, writeWindowMs: 4_000 });
    emulators.push(emu);
    const podIds = emu.emulator.pods.all().map((p) => p.id);
    const url = await freshDatabaseUrl();
    const env = {
      DATABASE_URL: url,
      SVC_WEBHOOK_SECRET: TEST_SECRET,
      SVC_BASE_URL: emu.url,
      SVC_API_KEY: KEY,
      SVC_WRITE_LIMIT: '60/4s',
      // A call waits for its token at most half its run's time left (1.5 s here), the other half
      // being for the request. 32 runs at a time a replica start together: 96 runs ask for the
      // first window's 60 tokens at once, so at least 36 find theirs up to four seconds away and
      // must park and resume, unless a busy host starts them 2.5 s late (16 a replica, a 2 s
      // window: whether any parked was left to timing).
      HANDLER_TIMEOUT_MS: '3000',
      DISPATCH_CONCURRENCY: '32',
      DISPATCH_POLL_MS: '100',
    };
    const replicas = await Promise.all([0, 1, 2].map(() => pool.start(env, { handlers: POD_ACTION_REGISTRY })));
    const urls = replicas.map((r) => r.url);
    await waitReady(urls);

    const plan = Array.from({ length: DELIVERIES }, (_, i) =>
      signDelivery({ t: Math.floor(Date.now() / 1000), eventType: 'pod.backup.failed', eventId: randomUUID(), body: { pod: { id: podIds[i % podIds.length] }, backupId: randomUUID() } }),
    );
    const answers: Answer[] = [];
    let next = 0;
    const started = Date.now();
    // Six senders, each delivery to one replica in turn.
    await Promise.all(
      Array.from({ length: 6 }, async () => {
        while (next < plan.length) {
          const i = next++;
          answers.push(await send(urls[i % urls.length]!, plan[i]!));
        }
      }),
    );
    expect(answers.filter((a) => a.status !== 200)).toEqual([]);
    const rows = await waitAllProcessed(url, plan.map((d) => d.eventId), 60_000);
    const elapsed = Date.now() - started;
    expect(rows).toHaveLength(DELIVERIES);

    const { writes } = emu.emulator.bucketCounts();
    expect(writes.refused).toBeLessThanOrEqual(1);
    const ids = emu.emulator.queuedActions().map((a) => a.request_id);
    expect(ids).toHaveLength(DELIVERIES);
    expect(new Set(ids).size).toBe(DELIVERIES);
    // Each request id is a step's idempotency key: the call was made inside ctx.step.
    for (const id of ids) expect(id).toMatch(/^st_[0-9a-f]{40}$/);
    expect(writes.allowed).toBe(DELIVERIES);
    // 200 writes at 60 per 4 s take at least three windows after the first.
    expect(elapsed).toBeGreaterThan(12_000);

    // No run counted a failure: every delivery processed at its first attempt, parks not counted.
    const attempts = await query<{ attempts: number; count: string }>(url, 'select attempts, count(*) from deliveries group by attempts');
    expect(attempts).toEqual([{ attempts: 1, count: String(DELIVERIES) }]);
    // Some runs parked on the write bucket and resumed: the replicas' metrics count them.
    const pages = await Promise.all(urls.map(async (u) => (await fetch(`${u}/metrics`)).text()));
    const parked = pages.reduce((n, p) => n + sample(p, 'podhook_handler_runs_total', 'handler="restartPod",outcome="parked"'), 0);
    const succeeded = pages.reduce((n, p) => n + sample(p, 'podhook_handler_runs_total', 'handler="restartPod",outcome="succeeded"'), 0);
    const failedRuns = pages.reduce((n, p) => n + sample(p, 'podhook_handler_failures_total', 'handler="restartPod"'), 0);
    const waited = pages.reduce((n, p) => n + sample(p, 'podhook_pods_wait_seconds_total', 'bucket="writes"'), 0);
    const calls = pages.reduce((n, p) => n + sample(p, 'podhook_pods_calls_total', 'code="ok",operation="queueAction"'), 0);
    expect(parked).toBeGreaterThan(0);
    expect(succeeded).toBe(DELIVERIES);
    expect(failedRuns).toBe(0);
    expect(calls).toBe(DELIVERIES);
    // Every replica ran some of them.
    for (const p of pages) expect(sample(p, 'podhook_handler_runs_total', 'handler="restartPod",outcome="succeeded"')).toBeGreaterThan(0);
    console.log(JSON.stringify({ elapsed, refused: writes.refused, parked, waitedSeconds: Number(waited.toFixed(2)) }));
  }, 120_000);
});
