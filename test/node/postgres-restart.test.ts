// PostgreSQL stopped and started under load (issue 21), with the replicas of deploy/compose.yaml
// (their command and environment, read from the file): they answer 503 while it is gone,
// reconnect when it is back, and nothing acknowledged is lost.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { REPLICA_REGISTRY } from '../fixtures/registry-paths.js';
import { COMPOSE_FILE, composeReplicas } from '../helpers/compose.js';
import { startEmbeddedPostgres, type EmbeddedServer } from '../helpers/embedded-postgres.js';
import { freshDatabaseUrl } from '../helpers/postgres.js';
import { FAST_LEASES, missingCompletions, overlappingRuns, readRuns, replicaPool, runIntervals, send, waitAllProcessed, waitReady, type Answer } from '../helpers/replicas.js';
import { signDelivery, TEST_SECRET } from '../helpers/sign.js';
import { useTempDir } from '../helpers/temp-dir.js';

const pool = replicaPool();
const tempDir = useTempDir('podhook-pg-restart-');
let server: EmbeddedServer | undefined;
afterEach(async () => {
  await pool.stopAll();
  await server?.remove();
  server = undefined;
});


describe('PostgreSQL stopped and started under load', () => {
  it('deploy/compose.yaml: its podhook services are what the load balancer serves', () => {
    const names = composeReplicas({ DATABASE_URL: 'postgres://x@h/d', SVC_WEBHOOK_SECRET: 'x' }).map((s) => s.name);
    expect(names.length).toBeGreaterThanOrEqual(2);
    const upstream = [...readFileSync(join(COMPOSE_FILE, '..', 'nginx.conf'), 'utf8').matchAll(/^\s*server\s+([\w-]+):3000;/gm)].map((m) => m[1]);
    expect(upstream).toEqual(names);
  });

  it("the compose file's replicas answer 503 (ingest and /readyz) while it is down, accept again once it is back, and lose nothing acknowledged", async () => {
    server = await startEmbeddedPostgres({ maxConnections: 100 });
    const url = await freshDatabaseUrl(server.adminUrl);
    const password = decodeURIComponent(new URL(url).password);
    const recordDir = tempDir();
    const services = composeReplicas({ DATABASE_URL: url, SVC_WEBHOOK_SECRET: TEST_SECRET });
    expect(services).toHaveLength(2);
    const replicas = await Promise.all(
      services.map((s) => pool.start({ ...s.environment, ...FAST_LEASES, RECORD_DIR: recordDir }, { command: s.command, handlers: REPLICA_REGISTRY })),
    );
    const urls = replicas.map((r) => r.url);
    await waitReady(urls);

    // Four senders, each sending a new delivery to the replicas in turn until told to stop.
    const answers: Answer[] = [];
    let sending = true;
    async function sender(k: number) {
      for (let i = k; sending; i++) {
        const answer = await send(urls[i % urls.length]!, signDelivery({ t: Math.floor(Date.now() / 1000) }));
        answers.push(answer);
        if (answer.status !== 200) await sleep(20);
      }
    }
    const senders = Promise.all([0, 1, 2, 3].map(sender));
    const since = (t: number, status: number, url: string) => answers.filter((a) => a.sentAt >= t && a.status === status && a.url === url);
    await vi.waitFor(() => expect(answers.filter((a) => a.status === 200).length).toBeGreaterThan(40), { timeout: 20_000 });

    await server.stop();
    const downFrom = Date.now();
    await vi.waitFor(
      async () => {
        for (const [i, u] of urls.entries()) {
          expect(replicas[i]!.child.exitCode, replicas[i]!.output().slice(-2000)).toBeNull();
          expect((await fetch(`${u}/readyz`)).status).toBe(503);
          expect(since(downFrom, 503, u).length).toBeGreaterThan(0);
        }
      },
      { timeout: 20_000, interval: 100 },
    );
    const downUntil = Date.now();
    await server.start();
    const upAgain = Date.now();
    await waitReady(urls, 30_000);
    await vi.waitFor(() => urls.forEach((u) => expect(since(upAgain, 200, u).length).toBeGreaterThan(5)), { timeout: 30_000 });
    sending = false;
    await senders;

    // No 200 for a request sent and answered while the server was down.
    expect(answers.filter((a) => a.status === 200 && a.sentAt >= downFrom && a.answeredAt <= downUntil)).toEqual([]);
    expect(new Set(answers.map((a) => a.status))).toEqual(new Set([200, 503]));
    // Every acknowledged delivery is stored and processed, each handler ran to the end on one replica at a time.
    const acked = answers.filter((a) => a.status === 200).map((a) => a.eventId);
    const rows = await waitAllProcessed(url, acked);
    const runs = runIntervals(readRuns(recordDir));
    expect(missingCompletions(rows, runs)).toEqual([]);
    expect(overlappingRuns(runs)).toEqual([]);
    // Both replicas lived through it (a connection dropped while checked out must not crash one).
    for (const r of replicas) {
      expect([r.child.exitCode, r.child.signalCode]).toEqual([null, null]);
      expect(r.output()).toContain('PostgreSQL LISTEN connection lost');
      expect(r.output()).not.toContain(password);
    }
  }, 90_000);
});
