/**
 * `npm run bench`: podhook against what users would run instead, side by side in one run.
 *
 * Every target runs as its own process pinned to core 0 (`taskset`), the load client to core 1.
 * Rounds alternate short bursts across targets, and the median of each figure is reported with
 * the ratios podhook/limit and podhook/peer, since absolute figures wander on this shared host.
 * Each full-load burst also reads the server's CPU over the burst: a target below 90% of a core
 * is not at its limit (the client, the host or its own waits set the pace), so the run prints a
 * warning and latest.json says so (`saturated`, `unsaturated_targets`, each target's
 * `saturation`), and a ratio against it is not a ratio of limits.
 * A second series (bench/table-series.ts) measures throughput with 0, 100k and 1M rows stored
 * and a 1M-row retention prune under load. Writes bench/results/latest.json.
 *
 * Options: `--quick` (two short rounds of the main series only, within about 60 s),
 * `--series=main,table`, `--targets=limit,peer,podhook,...` (see ALL_TARGETS for diagnostics).
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  burst,
  cpuTimes,
  handlerLag,
  load,
  median,
  peakRssMb,
  podhookArgs,
  ROOT,
  round,
  SECRET,
  startTarget,
  stealPercent,
  twoCores,
  type Running,
  type TargetSpec,
} from './harness.js';
import type { LoadResult } from './load-client.js';
import { runTableSeries } from './table-series.js';

const quick = process.argv.includes('--quick');
const only = process.argv.find((a) => a.startsWith('--targets='))?.slice('--targets='.length).split(',');
const series = process.argv.find((a) => a.startsWith('--series='))?.slice('--series='.length).split(',') ?? (quick ? ['main'] : ['main', 'table']);

const ALL_TARGETS: TargetSpec[] = [
  { name: 'limit', args: ['--import', 'tsx', 'bench/targets/limit.ts'] },
  { name: 'peer', args: ['--import', 'tsx', 'bench/targets/peer.ts'], env: { SQLITE_SYNC: 'FULL' } },
  { name: 'hono-insert-normal', args: ['--import', 'tsx', 'bench/targets/hono-insert.ts'], env: { SQLITE_SYNC: 'NORMAL' } },
  // Hand-written group commit without podhook's code: the design's own cost (README, Performance).
  { name: 'group-commit', args: ['--import', 'tsx', 'bench/targets/group-commit.ts'] },
  { name: 'group-commit-podhook-work', args: ['--import', 'tsx', 'bench/targets/group-commit.ts'], env: { GROUP_COMMIT_WORK: 'podhook' } },
  // podhook as shipped: what `npm start` runs (compiled by `npm run build` at the start of the bench).
  { name: 'podhook', args: podhookArgs() },
  // The same with V8's garbage collection on the main thread only (README, Performance: one core).
  { name: 'podhook-single-threaded-gc', args: podhookArgs('--single-threaded-gc') },
  // Diagnostics (run with --targets=…): ingest alone, without per-delivery log lines, from sources via tsx.
  { name: 'podhook-ingest-only', args: podhookArgs(), env: { DISPATCHER: 'off' } },
  { name: 'podhook-warn-logs', args: podhookArgs(), env: { LOG_LEVEL: 'warn' } },
  { name: 'podhook-tsx', args: ['bin/podhook.js', 'serve'] },
];
const DEFAULT_TARGETS = quick
  ? ['limit', 'peer', 'hono-insert-normal', 'podhook']
  : ['limit', 'peer', 'hono-insert-normal', 'group-commit', 'group-commit-podhook-work', 'podhook', 'podhook-single-threaded-gc'];

const ROUNDS = quick ? 2 : 5;
const BURST_MS = quick ? 1500 : 4000;
const RATE_MS = quick ? 1000 : 4000;
const CONCURRENCY = 32;
const FIXED_RATE = 1000;

async function main() {
  // podhook runs as `npm start` does: compiled first.
  const build = spawnSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
  if (build.status !== 0) throw new Error('npm run build failed');
  if (series.includes('main')) await mainSeries();
  if (series.includes('table')) {
    const table = await runTableSeries({
      sizes: [0, 100_000, 1_000_000],
      rounds: 3,
      burstMs: 3000,
      pruneRows: 1_000_000,
      pruneLoadMs: 160_000,
      log: (line) => process.stderr.write(`${line}\n`),
    });
    const path = join(ROOT, 'bench/results/latest.json');
    const report = series.includes('main') ? JSON.parse(readFileSync(path, 'utf8')) : { date: new Date().toISOString() };
    report.table_series = table;
    writeFileSync(path, `${JSON.stringify(report, null, 2)}\n`);
    console.log(`table series: ${JSON.stringify(table, null, 1)}`);
  }
}

async function mainSeries() {
  const targets = ALL_TARGETS.filter((t) => (only ?? DEFAULT_TARGETS).includes(t.name));
  const dir = mkdtempSync(join(tmpdir(), 'podhook-bench-'));
  const stealBefore = cpuTimes();
  const running: Running[] = [];
  try {
    for (const spec of targets) running.push(await startTarget(spec, join(dir, `${spec.name}.db`)));
    // Warm-up: JIT, SQLite page cache, connection pools (--quick: each burst's own warm-up only).
    if (!quick) for (const r of running) load({ url: r.url, secret: SECRET, durationMs: 1000, concurrency: CONCURRENCY });

    const samples = new Map<string, { max: LoadResult[]; rate: LoadResult[]; cpuUsPerReq: number[] }>();
    for (const r of running) samples.set(r.spec.name, { max: [], rate: [], cpuUsPerReq: [] });
    for (let round = 0; round < ROUNDS; round++) {
      // Alternate the order each round so no target always runs right after the same neighbour.
      const order = round % 2 === 0 ? running : [...running].reverse();
      for (const r of order) {
        const s = samples.get(r.spec.name)!;
        const result = burst(r, { durationMs: BURST_MS, concurrency: CONCURRENCY });
        // Server CPU per request: steadier than req/s on a shared host (another tenant's load
        // lowers throughput, not the work one request costs). Includes background dispatch.
        s.cpuUsPerReq.push(result.cpuUsPerRequest);
        s.max.push(result);
      }
      for (const r of order) {
        samples.get(r.spec.name)!.rate.push(load({ url: r.url, secret: SECRET, durationMs: RATE_MS, rate: FIXED_RATE, concurrency: 64 }));
      }
      process.stderr.write(`round ${round + 1}/${ROUNDS} done\n`);
    }

    const results: Record<string, unknown> = {};
    for (const r of running) {
      const s = samples.get(r.spec.name)!;
      const failed = s.max.reduce((a, x) => a + (x.sent - x.ok), 0) + s.rate.reduce((a, x) => a + (x.sent - x.ok), 0);
      results[r.spec.name] = {
        rps: median(s.max.map((x) => x.rps)),
        p50_ms: round(median(s.max.map((x) => x.latencyMs.p50))),
        p99_ms: round(median(s.max.map((x) => x.latencyMs.p99))),
        max_ms: round(median(s.max.map((x) => x.latencyMs.max))),
        fixed_rate_rps: FIXED_RATE,
        fixed_rate_p99_ms: round(median(s.rate.map((x) => x.latencyMs.p99))),
        fixed_rate_max_ms: round(median(s.rate.map((x) => x.latencyMs.max))),
        server_cpu_us_per_request: median(s.cpuUsPerReq),
        peak_rss_mb: peakRssMb(r.child.pid!),
        non_200: failed,
        rounds_rps: s.max.map((x) => x.rps),
        saturation: saturationOf(s.max),
        // podhook only: receipt → handler start, over every burst of the run (from /metrics).
        ...(r.spec.name.startsWith('podhook') && !r.spec.env?.DISPATCHER ? { handler_lag: await handlerLag(r.port) } : {}),
      };
    }
    const unsaturated = Object.entries(results).filter(([, v]) => !(v as { saturation: Saturation }).saturation.saturated);
    const fig = (name: string) => results[name] as { rps: number } | undefined;
    const ratio = (a?: { rps: number }, b?: { rps: number }) => (a && b && b.rps ? Math.round((a.rps / b.rps) * 1000) / 1000 : null);
    const report = {
      date: new Date().toISOString(),
      machine: { cpus: cpus().length, model: cpus()[0]?.model, pinned: twoCores, node: process.version },
      settings: { rounds: ROUNDS, burst_ms: BURST_MS, concurrency: CONCURRENCY, body_bytes: 1024, fixed_rate: FIXED_RATE, quick },
      steal_percent: stealPercent(stealBefore, cpuTimes()),
      // False when any target's server used less than SATURATED of a core at full load: its
      // req/s is then not its limit (see each target's `saturation`).
      saturated: unsaturated.length === 0,
      unsaturated_targets: unsaturated.map(([name]) => name),
      targets: results,
      ratios: {
        podhook_vs_limit: ratio(fig('podhook'), fig('limit')),
        podhook_vs_peer: ratio(fig('podhook'), fig('peer')),
      },
    };
    mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
    writeFileSync(join(ROOT, 'bench/results/latest.json'), `${JSON.stringify(report, null, 2)}\n`);
    printTable(report);
    for (const [name, v] of unsaturated) warnUnsaturated(name, (v as { saturation: Saturation }).saturation);
  } finally {
    for (const r of running) r.child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A server at full load should use at least this share of its core, or its req/s is not its limit. */
const SATURATED = 0.9;

interface Saturation {
  /** Median over the full-load bursts: the server process's CPU time per wall time (1 = one core). */
  server_cpu_share: number;
  /** The server's main thread on a CPU, and waiting for one while another process had it. */
  main_thread_on_cpu: number;
  main_thread_waiting_for_cpu: number;
  client_cpu_share: number;
  client_waiting_for_cpu: number;
  /** The load client's own CPU per request: below the server's, the client can outpace it. */
  client_cpu_us_per_request: number;
  saturated: boolean;
  /** When not saturated: who set the pace instead. */
  limited_by?: 'host' | 'client' | 'server_waits';
}

/**
 * Whether the server was the bottleneck during its full-load bursts. Below SATURATED, the
 * cause: the client using its whole core; else the server or the client ready to run but
 * without a CPU for more than the margin (other work on the host); else the server waited
 * (fsync, I/O, too few requests in flight).
 */
function saturationOf(bursts: LoadResult[]): Saturation {
  const m = (f: (x: LoadResult) => number) => round(median(bursts.map(f)));
  const sat: Saturation = {
    server_cpu_share: m((x) => x.serverCpuShare ?? 0),
    main_thread_on_cpu: m((x) => x.serverMainThread?.onCpu ?? 0),
    main_thread_waiting_for_cpu: m((x) => x.serverMainThread?.waitingForCpu ?? 0),
    client_cpu_share: m((x) => x.clientCpuShare),
    client_waiting_for_cpu: m((x) => x.clientWaitingForCpu),
    client_cpu_us_per_request: m((x) => (x.clientCpuShare * x.elapsedMs * 1000) / Math.max(1, x.sent)),
    saturated: false,
  };
  sat.saturated = sat.server_cpu_share >= SATURATED;
  if (!sat.saturated) {
    const lostToHost = 1 - SATURATED;
    if (sat.client_cpu_share >= SATURATED) sat.limited_by = 'client';
    else if (sat.main_thread_waiting_for_cpu >= lostToHost || sat.client_waiting_for_cpu >= lostToHost) sat.limited_by = 'host';
    else sat.limited_by = 'server_waits';
  }
  return sat;
}

function warnUnsaturated(name: string, s: Saturation) {
  const why = {
    host: 'the server or the load client was ready to run but other processes had the CPU (a busy host: rerun when it is quiet)',
    client: 'the load client used its whole core: the client, not the server, set the pace',
    server_waits: 'it waited on something other than CPU (fsync, I/O) or had too few requests in flight',
  }[s.limited_by!];
  const pct = (x: number) => `${Math.round(x * 100)}%`;
  console.warn(
    `WARNING: ${name} used ${pct(s.server_cpu_share)} of a core at full load (< ${pct(SATURATED)}): its req/s is not its CPU limit; ${why}. ` +
      `(server main thread on CPU ${pct(s.main_thread_on_cpu)}, waiting for a CPU ${pct(s.main_thread_waiting_for_cpu)}; ` +
      `client on CPU ${pct(s.client_cpu_share)}, waiting ${pct(s.client_waiting_for_cpu)}, ${s.client_cpu_us_per_request} µs/request)`,
  );
}

function printTable(report: { targets: Record<string, unknown>; ratios: Record<string, number | null>; steal_percent: number }) {
  const rows = Object.entries(report.targets).map(([name, v]) => {
    const f = v as Record<string, number>;
    const share = (v as { saturation: Saturation }).saturation.server_cpu_share;
    return [name, f.rps, f.p50_ms, f.p99_ms, f.max_ms, f.fixed_rate_p99_ms, f.server_cpu_us_per_request, share, f.peak_rss_mb, f.non_200].map(String);
  });
  const head = ['target', 'req/s', 'p50 ms', 'p99 ms', 'max ms', 'p99@1k/s', 'cpu µs/req', 'cpu share', 'RSS MB', 'non-200'];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padStart(widths[i]!)).join('  ');
  console.log([line(head), ...rows.map(line)].join('\n'));
  console.log(`ratios: ${JSON.stringify(report.ratios)}   host steal: ${report.steal_percent}%`);
}

await main();
