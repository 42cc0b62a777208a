/**
 * The second series of `npm run bench`: does ingest cost grow with the table, and does a prune
 * stall ingest? Run by bench/run.ts (alone: `npm run bench -- --series=table`).
 *
 * 1. Throughput against databases already holding 0, 100k and 1M processed rows (1 KiB bodies),
 *    three podhook servers measured in alternating bursts, as in the main series.
 * 2. A database holding 1M expired rows: podhook's own retention prune starts 10 s after start
 *    while a fixed-rate load runs; reported: prune time and ingest latency during the prune.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { closeSync, fsyncSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '../src/store/sqlite/open-database.js';
import { eventBody } from './load-client.js';
import { burst, load, median, podhookArgs, startTarget, SECRET, type Running } from './harness.js';

/** Fills a fresh podhook database with `rows` processed deliveries received at `receivedAt`. */
export function seedDatabase(path: string, rows: number, receivedAt: number): void {
  const { sqlite, close } = openDatabase(path);
  sqlite.pragma('synchronous = OFF'); // setup only; the server reopens it with FULL
  const insert = sqlite.prepare(
    `insert into deliveries (event_id, event_type, signature_t, content_digest, body, headers, received_at,
       last_received_at, status, attempts, processed_at)
     values (?, 'pod.status.changed', ?, ?, ?, '{"content-type":"application/json"}', ?, ?, 'processed', 1, ?)`,
  );
  const chunk = sqlite.transaction((n: number, offset: number) => {
    for (let i = 0; i < n; i++) {
      const id = randomUUID();
      const at = receivedAt + offset + i;
      insert.run(id, Math.floor(at / 1000), randomBytes(32), eventBody(1024, id), at, at, at);
    }
  });
  for (let done = 0; done < rows; done += 10_000) chunk(Math.min(10_000, rows - done), done);
  sqlite.pragma('wal_checkpoint(TRUNCATE)');
  close();
  // Written with synchronous=OFF, the file is still dirty in the page cache: flushed now, not by
  // the kernel's writeback while the server is being measured (it stalled the first second).
  const fd = openSync(path, 'r+');
  fsyncSync(fd);
  closeSync(fd);
}

export interface TableSeriesOptions {
  sizes: number[];
  rounds: number;
  burstMs: number;
  pruneRows: number;
  /** How long the fixed-rate load runs around the prune (which starts 10 s after the server). */
  pruneLoadMs: number;
  log: (line: string) => void;
}

export async function runTableSeries({ sizes, rounds, burstMs, pruneRows, pruneLoadMs, log }: TableSeriesOptions) {
  const dir = mkdtempSync(join(tmpdir(), 'podhook-table-'));
  const running: Running[] = [];
  try {
    const now = Date.now();
    for (const rows of sizes) {
      const t0 = performance.now();
      seedDatabase(join(dir, `rows-${rows}.db`), rows, now - 3_600_000);
      log(`seeded ${rows} rows in ${Math.round(performance.now() - t0)} ms`);
    }
    for (const rows of sizes) {
      running.push(await startTarget({ name: `rows-${rows}`, args: podhookArgs() }, join(dir, `rows-${rows}.db`)));
    }
    for (const r of running) load({ url: r.url, secret: SECRET, durationMs: 1000, concurrency: 32 });
    const rps = new Map<string, number[]>(running.map((r) => [r.spec.name, []]));
    const cpu = new Map<string, number[]>(running.map((r) => [r.spec.name, []]));
    for (let round = 0; round < rounds; round++) {
      for (const r of round % 2 ? [...running].reverse() : running) {
        const result = burst(r, { durationMs: burstMs, concurrency: 32 });
        rps.get(r.spec.name)!.push(result.rps);
        cpu.get(r.spec.name)!.push(result.cpuUsPerRequest);
      }
      log(`table round ${round + 1}/${rounds} done`);
    }
    for (const r of running.splice(0)) r.child.kill('SIGKILL');
    const throughput = Object.fromEntries(
      sizes.map((rows) => [rows, { rps: median(rps.get(`rows-${rows}`)!), server_cpu_us_per_request: median(cpu.get(`rows-${rows}`)!) }]),
    );
    const empty = throughput[sizes[0]!]!;
    const largest = throughput[sizes[sizes.length - 1]!]!;

    // Prune: 1M rows received 40 days ago; RETENTION_DAYS=30; the server prunes 10 s after start.
    const prunePath = join(dir, 'prune.db');
    const t0 = performance.now();
    seedDatabase(prunePath, pruneRows, now - 40 * 86_400_000);
    log(`seeded ${pruneRows} expired rows in ${Math.round(performance.now() - t0)} ms`);
    const server = await startTarget({ name: 'prune', args: podhookArgs(), env: { RETENTION_DAYS: '30' } }, prunePath);
    running.push(server);
    // Fixed 1,000 req/s from before the prune starts until well after a 1M-row prune ends.
    const during = load({ url: server.url, secret: SECRET, durationMs: pruneLoadMs, rate: 1000, concurrency: 64 });
    const line = await server.waitForLine(/"msg":"pruned old deliveries"/, 120_000);
    const pruned = JSON.parse(line) as { removed: number; duration_ms: number; time: number };
    // The server's own answer times (its `delivery` lines) for deliveries answered while the
    // prune ran: the client's figures also cover the time before and after it.
    const pruneStart = pruned.time - pruned.duration_ms;
    const inPrune = server
      .output()
      .split('\n')
      .filter((l) => l.includes('"msg":"delivery"'))
      .map((l) => JSON.parse(l) as { time: number; latency_ms: number })
      .filter((d) => d.time >= pruneStart && d.time <= pruned.time)
      .map((d) => d.latency_ms)
      .sort((a, b) => a - b);
    const at = (q: number) => inPrune[Math.min(inPrune.length - 1, Math.floor(q * inPrune.length))] ?? 0;
    return {
      throughput,
      ratio_largest_vs_empty: Math.round((largest.rps / empty.rps) * 1000) / 1000,
      // CPU per request, largest table over empty: the cost itself, steadier than req/s when
      // another tenant of the host slows one burst (req/s falls, the work per request does not).
      cpu_ratio_largest_vs_empty: Math.round((largest.server_cpu_us_per_request / empty.server_cpu_us_per_request) * 1000) / 1000,
      prune: {
        rows: pruned.removed,
        duration_ms: pruned.duration_ms,
        ingest_at_1000_rps_during: { p50_ms: during.latencyMs.p50, p99_ms: during.latencyMs.p99, max_ms: during.latencyMs.max, non_200: during.sent - during.ok },
        server_side_while_pruning: { deliveries: inPrune.length, p50_ms: at(0.5), p99_ms: at(0.99), max_ms: inPrune.at(-1) ?? 0 },
        prune_within_load: 10_000 + pruned.duration_ms < pruneLoadMs,
        note: `client figures: load runs ${pruneLoadMs / 1000} s at 1,000 req/s from server start, the prune starts 10 s after the server; server-side: answer times logged while the prune ran`,
      },
    };
  } finally {
    for (const r of running) r.child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}
