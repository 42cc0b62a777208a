// Issue 37 §5 with handlers: three `podhook serve` replicas on one PostgreSQL, each running a
// handler that queues an action with ctx.pods inside a step, against the emulator counting 20
// writes per 12 s. The account's buckets in the store keep the three together: at most the first
// 429, every action queued once, no run dead; runs whose token is further off than half their
// time left park and resume.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/start-emulator.js';
import { POD_ACTION_REGISTRY } from '../fixtures/registry-paths.js';
import { freshDatabaseUrl } from '../helpers/postgres.js';
import { replicaPool, send, waitAllProcessed, waitReady, type Answer } from '../helpers/replicas.js';
import { signDelivery, TEST_SECRET } from '../helpers/sign.js';

const KEY = 'svc_live_key_handler_replicas_01';
/** The service's write bucket, scaled down: WRITES per WINDOW_MS (fixed, from its first request). */
const WRITES = 20;
const WINDOW_MS = 12_000;
/** Two windows' worth: the second half can only go out a window after the first. */
const DELIVERIES = 2 * WRITES;
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
  it('queues 40 actions, each once, within 20 writes per 12 s: at most the first 429, no run dead, runs parked on the bucket resume', async () => {
    const emu = await startEmulator({ apiKey: KEY, seedPods: 4, writeLimit: WRITES, writeWindowMs: WINDOW_MS });
    emulators.push(emu);
    const podIds = emu.emulator.pods.all().map((p) => p.id);
    const url = await freshDatabaseUrl();
    const env = {
      DATABASE_URL: url,
      SVC_WEBHOOK_SECRET: TEST_SECRET,
      SVC_BASE_URL: emu.url,
      SVC_API_KEY: KEY,
      SVC_WRITE_LIMIT: `${WRITES}/${WINDOW_MS / 1000}s`,
      // A call waits for its token at most half its run's time left (under 6 s here), the other
      // half being for the request and the step's record, which on a starved host take seconds:
      // with 3 s, runs timed out after their request went out, and their retried step sent it again.
      HANDLER_TIMEOUT_MS: '12000',
      // After the warm-up below, 37 deliveries at once and 8 runs at a time a replica: 24 runs on
      // the 17 tokens the window has left. Past the warm-up's 3 (back a window after it), each
      // token is next free a window (12 s) after the burst took it, beyond any run's wait: at
      // least 4 runs park, unless a host takes over 6 s between the burst's first token and its
      // 21st. (32 runs a replica made more takes race for the same token row, each lost race one
      // more statement: seconds on a starved host.)
      DISPATCH_CONCURRENCY: '8',
      DISPATCH_POLL_MS: '100',
    };
    const replicas = await Promise.all([0, 1, 2].map(() => pool.start(env, { handlers: POD_ACTION_REGISTRY })));
    const urls = replicas.map((r) => r.url);
    await waitReady(urls);

    const plan = Array.from({ length: DELIVERIES }, (_, i) =>
      signDelivery({ t: Math.floor(Date.now() / 1000), eventType: 'pod.backup.failed', eventId: randomUUID(), body: { pod: { id: podIds[i % podIds.length] }, backupId: randomUUID() } }),
    );
    const started = Date.now();
    // One delivery to each replica first, processed before the rest go: a replica's first run pays
    // for its cold code (its first step, call to the service and token) and on a starved host took
    // seconds of its time limit; the burst's runs find it warm.
    const warmUp = plan.slice(0, urls.length);
    const answers: Answer[] = await Promise.all(warmUp.map((d, i) => send(urls[i]!, d)));
    await waitAllProcessed(url, warmUp.map((d) => d.eventId), 60_000);
    // The rest at once, each to one replica in turn.
    answers.push(...(await Promise.all(plan.slice(urls.length).map((d, i) => send(urls[i % urls.length]!, d)))));
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
    // 40 writes at 20 per 12 s take at least one window after the first.
    expect(elapsed).toBeGreaterThan(WINDOW_MS);

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
