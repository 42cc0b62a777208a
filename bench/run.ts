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
 * PostgreSQL targets (bench/postgres.ts): podhook with one replica, then two, on one real
 * PostgreSQL server at its durable defaults, their cost per delivery counting the database
 * server's CPU, with the statements (round trips), WAL bytes and rows each delivery costs it,
 * and the load idle replicas put on it.
 * A second series (bench/table-series.ts) measures throughput with 0, 100k and 1M rows stored
 * and a 1M-row retention prune under load. Writes bench/results/latest.json.
 *
 * Options: `--quick` (two short rounds of the main series only, within about 60 s),
 * `--series=main,handlers,table` (handlers: bench/handler-series.ts), `--targets=limit,peer,podhook,...` (see ALL_TARGETS for diagnostics;
 * `podhook-shapes` is podhook with a learned payload module: `--targets=limit,podhook,podhook-shapes`),
 * `--base=DIR`: adds the target `podhook-base`, the build in DIR (a git worktree of another commit,
 * `npm run build` run there first), measured side by side with this one for an A/B.
 */
import { spawnSync } from 'node:child_process';
import Database from 'better-sqlite3';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  aimAt,
  burst,
  cpuTimes,
  handlerLag,
  load,
  median,
  peakRssMb,
  pinTree,
  rssMb,
  podhookArgs,
  ROOT,
  round,
  startOtlpSink,
  startTarget,
  stealPercent,
  twoCores,
  type Running,
  type TargetSpec,
} from './harness.js';
import { treeCpuMs, type LoadResult } from './load-client.js';
import { countersDelta, startBenchPostgres, type BenchPostgres, type StoreCounters } from './postgres.js';
import { SHAPES_REGISTRY, writeShapesRegistry } from './shapes-registry.js';
import { ORDERED_PODS, ORDERED_REGISTRY, UNORDERED_REGISTRY, writeOrderedRegistries } from './ordered-registry.js';
import { runTableSeries } from './table-series.js';
import { runHandlerSeries } from './handler-series.js';
import { writeHandlerRegistry } from './handler-registry.js';

const quick = process.argv.includes('--quick');
const only = process.argv.find((a) => a.startsWith('--targets='))?.slice('--targets='.length).split(',');
const series = process.argv.find((a) => a.startsWith('--series='))?.slice('--series='.length).split(',') ?? (quick ? ['main'] : ['main', 'handlers', 'table']);
const base = process.argv.find((a) => a.startsWith('--base='))?.slice('--base='.length);

const ALL_TARGETS: TargetSpec[] = [
  { name: 'limit', args: ['--import', 'tsx', 'bench/targets/limit.ts'] },
  { name: 'peer', args: ['--import', 'tsx', 'bench/targets/peer.ts'], env: { SQLITE_SYNC: 'FULL' } },
  { name: 'hono-insert-normal', args: ['--import', 'tsx', 'bench/targets/hono-insert.ts'], env: { SQLITE_SYNC: 'NORMAL' } },
  // Hand-written group commit without podhook's code: the design's own cost (README, Performance).
  { name: 'group-commit', args: ['--import', 'tsx', 'bench/targets/group-commit.ts'] },
  { name: 'group-commit-podhook-work', args: ['--import', 'tsx', 'bench/targets/group-commit.ts'], env: { GROUP_COMMIT_WORK: 'podhook' } },
  // podhook as shipped: what `npm start` runs (compiled by `npm run build` at the start of the bench).
  { name: 'podhook', args: podhookArgs() },
  // The same with handlers in the receiver's thread (HANDLER_THREADS=0): what the handler threads cost or save.
  { name: 'podhook-in-thread', args: podhookArgs(), env: { HANDLER_THREADS: '0' } },
  // The same with a module `podhook schemas` learned from the bench's own payloads (bench/shapes-registry.ts):
  // the drift check at the door and the generated schema at dispatch, on every delivery.
  { name: 'podhook-shapes', args: [...podhookArgs(), '--handlers', SHAPES_REGISTRY] },
  // One more handler, ordered per pod (or not), the load spread over 1,000 pods (bench/ordered-registry.ts).
  { name: 'podhook-ordered', args: [...podhookArgs(), '--handlers', ORDERED_REGISTRY], pods: ORDERED_PODS },
  { name: 'podhook-unordered', args: [...podhookArgs(), '--handlers', UNORDERED_REGISTRY], pods: ORDERED_PODS },
  // Diagnostic: ordered without the hold, so each delivery is dispatched once (with the hold, twice:
  // its unordered handlers at once, the ordered one when the hold ends): the order machinery alone.
  { name: 'podhook-ordered-no-hold', args: [...podhookArgs(), '--handlers', ORDERED_REGISTRY], pods: ORDERED_PODS, env: { ORDER_HOLD_MS: '0' } },
  // The same with V8's garbage collection on the main thread only (README, Performance: one core).
  { name: 'podhook-single-threaded-gc', args: podhookArgs('--single-threaded-gc') },
  // podhook on PostgreSQL (DATABASE_URL), the database server's CPU counted in the cost per
  // delivery. One replica has core 0 to itself like the SQLite node, and the database server
  // shares core 1 with the load client (the nearest this machine comes to a database on a host
  // of its own); two replicas share both cores with the database server and the load client.
  { name: 'podhook-postgres', args: podhookArgs(), postgres: true, storeCores: '1', readyPath: '/readyz' },
  // Its hand-written counterpart (group-commit-podhook-work on PostgreSQL, bench/targets/group-commit-postgres.ts):
  // the same durable work per delivery by hand, on the same server, pinned and counted as podhook-postgres.
  { name: 'group-commit-postgres-podhook-work', args: ['--import', 'tsx', 'bench/targets/group-commit-postgres.ts'], postgres: true, storeCores: '1' },
  { name: 'podhook-postgres-2', args: podhookArgs(), postgres: true, storeCores: '0,1', readyPath: '/readyz', replicas: 2, cores: '0,1' },
  // Diagnostics (run with --targets=…): ingest alone, without per-delivery log lines, from sources via tsx.
  { name: 'podhook-ingest-only', args: podhookArgs(), env: { DISPATCHER: 'off' } },
  { name: 'podhook-warn-logs', args: podhookArgs(), env: { LOG_LEVEL: 'warn' } },
  { name: 'podhook-tsx', args: ['bin/podhook.js', 'serve'] },
  // podhook with OpenTelemetry traces on, every one kept, exported to a local sink that discards them.
  { name: 'podhook-otel', args: podhookArgs(), env: { OTEL_TRACES_SAMPLER: 'always_on' }, otlpSink: true },
  // Diagnostic: the SDK started (its context manager on every promise) but no span sampled, so none recorded or exported.
  { name: 'podhook-otel-unsampled', args: podhookArgs(), env: { OTEL_TRACES_SAMPLER: 'always_off' }, otlpSink: true },
  // `--base=DIR`: the build of another commit, for an A/B beside `podhook`.
  ...(base ? [{ name: 'podhook-base', args: podhookArgs().map((a) => (a === 'dist/src/cli/run.js' ? join(base, a) : a)) }] : []),
];
const DEFAULT_TARGETS = quick
  ? ['limit', 'peer', 'hono-insert-normal', 'podhook', 'podhook-postgres', 'podhook-postgres-2']
  : ['limit', 'peer', 'hono-insert-normal', 'group-commit', 'group-commit-podhook-work', 'podhook', 'podhook-in-thread', 'podhook-single-threaded-gc', 'podhook-postgres', 'group-commit-postgres-podhook-work', 'podhook-postgres-2'];

const ROUNDS = quick ? 2 : 5;
const BURST_MS = quick ? 1500 : 4000;
const RATE_MS = quick ? 1000 : 4000;
const CONCURRENCY = 32;
const FIXED_RATE = 1000;
/** How long the PostgreSQL replicas are left idle, before the rounds, to measure their load on the database. */
const IDLE_MS = quick ? 5000 : 30_000;

async function main() {
  // podhook runs as `npm start` does: compiled first.
  const build = spawnSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
  if (build.status !== 0) throw new Error('npm run build failed');
  if ((only ?? DEFAULT_TARGETS).includes('podhook-shapes')) writeShapesRegistry();
  if ((only ?? DEFAULT_TARGETS).some((t) => t.startsWith('podhook-ordered') || t === 'podhook-unordered')) writeOrderedRegistries();
  if (series.includes('main')) await mainSeries();
  if (series.includes('handlers')) {
    writeHandlerRegistry();
    const handlers = await runHandlerSeries({ rounds: quick ? 1 : 3, phaseMs: quick ? 4000 : 10_000, burstMs: quick ? 1500 : 3000, log: (line) => process.stderr.write(`${line}\n`) });
    addToReport('handler_series', handlers);
    console.log(`handler series: ${JSON.stringify(handlers, null, 1)}`);
  }
  if (series.includes('table')) {
    const table = await runTableSeries({
      sizes: [0, 100_000, 1_000_000],
      rounds: 3,
      burstMs: 3000,
      pruneRows: 1_000_000,
      pruneLoadMs: 160_000,
      log: (line) => process.stderr.write(`${line}\n`),
    });
    addToReport('table_series', table);
    console.log(`table series: ${JSON.stringify(table, null, 1)}`);
  }
}

/** Adds a series' figures to bench/results/latest.json: to this run's main series, or to a report of its own. */
function addToReport(key: string, figures: unknown) {
  const path = join(ROOT, 'bench/results/latest.json');
  const report = ranMain ? JSON.parse(readFileSync(path, 'utf8')) : { date: new Date().toISOString() };
  report[key] = figures;
  writeFileSync(path, `${JSON.stringify(report, null, 2)}\n`);
  ranMain = true;
}
/** Whether latest.json holds this run's report already. */
let ranMain = false;

async function mainSeries() {
  const targets = ALL_TARGETS.filter((t) => (only ?? DEFAULT_TARGETS).includes(t.name));
  const dir = mkdtempSync(join(tmpdir(), 'podhook-bench-'));
  const stealBefore = cpuTimes();
  const running: Running[] = [];
  let postgres: BenchPostgres | undefined;
  let sink: Awaited<ReturnType<typeof startOtlpSink>> | undefined;
  try {
    if (targets.some((t) => t.postgres)) postgres = await startBenchPostgres();
    if (targets.some((t) => t.otlpSink)) sink = await startOtlpSink();
    for (const spec of targets) {
      const env = spec.postgres
        ? { ...spec.env, DATABASE_URL: await postgres!.createDatabase(dbName(spec.name)) }
        : spec.otlpSink
          ? { ...spec.env, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: sink!.endpoint(spec.name) }
          : spec.env;
      running.push(await startTarget({ ...spec, env }, join(dir, `${spec.name}.db`)));
    }
    // Idle replicas first, on databases with nothing to do: after load, autovacuum and checkpoints would be counted as idle.
    const pgRunning = running.filter((r) => r.spec.postgres);
    // podhook's replicas only: a hand-written target has nothing to poll, and would halve the figure per replica.
    const pgIdle = pgRunning.filter((r) => r.spec.name.startsWith('podhook'));
    const idle = postgres && pgIdle.length > 0 ? await idleLoad(postgres, pgIdle) : undefined;
    // Resident memory at rest: started (handler threads, if any, up) and not yet sent a delivery.
    await new Promise((r) => setTimeout(r, 2000));
    const rssAtRest = new Map(running.map((r) => [r.spec.name, Math.max(...r.replicas.map((x) => rssMb(x.child.pid!)))]));
    // Warm-up: JIT, SQLite page cache, connection pools (--quick: each burst's own warm-up only).
    if (!quick) for (const r of running) load({ ...aimAt(r), durationMs: 1000, concurrency: CONCURRENCY });

    const samples = new Map<string, { max: LoadResult[]; rate: LoadResult[]; cpuUsPerReq: number[]; rssMb: number[] }>();
    for (const r of running) samples.set(r.spec.name, { max: [], rate: [], cpuUsPerReq: [], rssMb: [] });
    /** PostgreSQL targets: what their full-load bursts cost the database, summed over the rounds. */
    const storeCost = new Map<string, ReturnType<typeof countersDelta>[]>();
    for (let round = 0; round < ROUNDS; round++) {
      // Alternate the order each round so no target always runs right after the same neighbour.
      const order = round % 2 === 0 ? running : [...running].reverse();
      for (const r of order) {
        const s = samples.get(r.spec.name)!;
        if (r.spec.postgres) pinTree(postgres!.pid(), r.spec.storeCores ?? '0,1');
        const before = r.spec.postgres ? await postgres!.counters(dbName(r.spec.name)) : undefined;
        const result = burst(r, { durationMs: BURST_MS, concurrency: CONCURRENCY, storePid: r.spec.postgres ? postgres!.pid() : undefined });
        if (before) storeCost.set(r.spec.name, [...(storeCost.get(r.spec.name) ?? []), countersDelta(before, await postgres!.counters(dbName(r.spec.name)))]);
        // Server CPU per request: steadier than req/s on a shared host (another tenant's load
        // lowers throughput, not the work one request costs). Includes background dispatch.
        s.cpuUsPerReq.push(result.cpuUsPerRequest);
        s.max.push(result);
        // Resident memory at the end of each full-load burst (the largest replica's): steadier than the one peak.
        s.rssMb.push(Math.max(...r.replicas.map((x) => rssMb(x.child.pid!))));
      }
      for (const r of order) {
        if (r.spec.postgres) pinTree(postgres!.pid(), r.spec.storeCores ?? '0,1');
        samples.get(r.spec.name)!.rate.push(load({ ...aimAt(r), durationMs: RATE_MS, rate: FIXED_RATE, concurrency: 64 }));
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
        // The largest replica's, for a replicated target.
        peak_rss_mb: Math.max(...r.replicas.map((x) => peakRssMb(x.child.pid!))),
        rss_at_rest_mb: rssAtRest.get(r.spec.name),
        rss_after_bursts_mb: round(median(s.rssMb)),
        ...(r.spec.postgres ? { postgres: storeFigures(s.max, storeCost.get(r.spec.name) ?? []) } : {}),
        non_200: failed,
        rounds_rps: s.max.map((x) => x.rps),
        saturation: saturationOf(s.max, r.spec),
        // podhook only: receipt → handler start, over every burst of the run (from /metrics).
        ...(r.spec.name.startsWith('podhook') && !r.spec.env?.DISPATCHER ? { handler_lag: await handlerLag(r.port) } : {}),
      };
    }
    // Rows written per delivery: read once the PostgreSQL replicas have stopped (their backends then report every row).
    for (const r of pgRunning) await stopGracefully(r);
    for (const r of pgRunning) {
      const w = await postgres!.tableWrites(dbName(r.spec.name));
      const per = (n: number) => round(n / Math.max(1, w.deliveries));
      Object.assign((results[r.spec.name] as { postgres: object }).postgres, {
        deliveries_stored: w.deliveries,
        rows_per_delivery: { inserted: per(w.inserted), updated: per(w.updated), of_which_hot: per(w.hotUpdated), deleted: per(w.deleted) },
      });
    }
    // Spans the tracing target exported: stopped with SIGTERM first, so its last batch is flushed.
    for (const r of running.filter((x) => x.spec.otlpSink)) {
      await stopGracefully(r);
      const db = new Database(join(dir, `${r.spec.name}.db`), { readonly: true });
      const { n } = db.prepare('select count(*) as n from deliveries').get() as { n: number };
      db.close();
      const got = await sink!.stats(r.spec.name);
      Object.assign(results[r.spec.name] as object, {
        otlp: { deliveries_stored: n, ingest_spans_exported_per_delivery: round(got.ingest_spans / Math.max(1, n)), bytes_per_delivery: Math.round(got.bytes / Math.max(1, n)), export_requests: got.requests },
      });
    }
    const unsaturated = Object.entries(results).filter(([, v]) => !(v as { saturation: Saturation }).saturation.saturated);
    type Fig = { rps: number; peak_rss_mb: number; rss_after_bursts_mb: number; server_cpu_us_per_request: number; fixed_rate_p99_ms: number };
    const fig = (name: string) => results[name] as Fig | undefined;
    const ratioOf = (key: keyof Fig) => (a?: Fig, b?: Fig) => (a && b && b[key] ? Math.round((a[key] / b[key]) * 1000) / 1000 : null);
    const ratio = ratioOf('rps');
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
        // Tracing on (every span kept and exported) against off, side by side; and `--base`'s A/B.
        podhook_otel_vs_podhook: ratio(fig('podhook-otel'), fig('podhook')),
        podhook_otel_vs_limit: ratio(fig('podhook-otel'), fig('limit')),
        podhook_otel_cpu_per_request_vs_podhook: ratioOf('server_cpu_us_per_request')(fig('podhook-otel'), fig('podhook')),
        podhook_vs_base: ratio(fig('podhook'), fig('podhook-base')),
        podhook_base_vs_limit: ratio(fig('podhook-base'), fig('limit')),
        podhook_cpu_per_request_vs_base: ratioOf('server_cpu_us_per_request')(fig('podhook'), fig('podhook-base')),
        // A learned payload module against none: req/s, and CPU per delivery (target: at most 1.05).
        shapes_vs_podhook: ratio(fig('podhook-shapes'), fig('podhook')),
        // An ordered handler over 1,000 pods against the same handler unordered.
        ordered_vs_unordered: ratio(fig('podhook-ordered'), fig('podhook-unordered')),
        ordered_cpu_per_delivery_vs_unordered: ratioOf('server_cpu_us_per_request')(fig('podhook-ordered'), fig('podhook-unordered')),
        shapes_cpu_per_delivery_vs_podhook: ratioOf('server_cpu_us_per_request')(fig('podhook-shapes'), fig('podhook')),
        // PostgreSQL against the SQLite node (targets: >= 0.85, >= 1.5 on separate machines; RSS within 10%).
        postgres_1_replica_vs_sqlite: ratio(fig('podhook-postgres'), fig('podhook')),
        postgres_2_replicas_vs_sqlite: ratio(fig('podhook-postgres-2'), fig('podhook')),
        postgres_replica_rss_vs_sqlite: ratioOf('rss_after_bursts_mb')(fig('podhook-postgres'), fig('podhook')),
        postgres_replica_peak_rss_vs_sqlite: ratioOf('peak_rss_mb')(fig('podhook-postgres'), fig('podhook')),
        // podhook on PostgreSQL against the same work by hand on the same server: req/s, and CPU per
        // delivery with the database server's (server_cpu_us_per_request counts it for PostgreSQL targets).
        postgres_vs_hand_written: ratio(fig('podhook-postgres'), fig('group-commit-postgres-podhook-work')),
        postgres_cpu_per_delivery_vs_hand_written: ratioOf('server_cpu_us_per_request')(fig('podhook-postgres'), fig('group-commit-postgres-podhook-work')),
        postgres_p99_at_1000_vs_hand_written: ratioOf('fixed_rate_p99_ms')(fig('podhook-postgres'), fig('group-commit-postgres-podhook-work')),
        // podhook against the same durable work by hand (group-commit-podhook-work): CPU per delivery
        // (target: at most 1.25) and p99 at 1,000 req/s (target: at most 2, and at most 10 ms).
        podhook_cpu_per_delivery_vs_hand_written: ratioOf('server_cpu_us_per_request')(fig('podhook'), fig('group-commit-podhook-work')),
        podhook_p99_at_1000_vs_hand_written: ratioOf('fixed_rate_p99_ms')(fig('podhook'), fig('group-commit-podhook-work')),
        // The same with handlers in the receiver's thread (HANDLER_THREADS=0), beside.
        in_thread_cpu_per_delivery_vs_hand_written: ratioOf('server_cpu_us_per_request')(fig('podhook-in-thread'), fig('group-commit-podhook-work')),
        in_thread_p99_at_1000_vs_hand_written: ratioOf('fixed_rate_p99_ms')(fig('podhook-in-thread'), fig('group-commit-podhook-work')),
        podhook_vs_in_thread: ratio(fig('podhook'), fig('podhook-in-thread')),
      },
      ...(idle ? { postgres_idle: idle } : {}),
    };
    mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
    writeFileSync(join(ROOT, 'bench/results/latest.json'), `${JSON.stringify(report, null, 2)}\n`);
    ranMain = true;
    printTable(report);
    for (const [name, v] of unsaturated) warnUnsaturated(name, (v as { saturation: Saturation }).saturation);
  } finally {
    for (const r of running) for (const x of r.replicas) x.child.kill('SIGKILL');
    sink?.child.kill('SIGKILL');
    await postgres?.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A target's database name on the bench's PostgreSQL server. */
const dbName = (target: string) => `bench_${target.replace(/-/g, '_')}`;

/** SIGTERM to every replica, then waits for each to exit (podhook closes its pool: its backends report their counters). */
async function stopGracefully(r: Running) {
  await Promise.all(
    r.replicas.map(({ child }) =>
      child.exitCode !== null || child.signalCode !== null
        ? undefined
        : new Promise<void>((resolve) => {
            child.once('exit', () => resolve());
            child.kill('SIGTERM');
          }),
    ),
  );
}

/**
 * What one delivery costs on PostgreSQL, from the full-load bursts: the replicas' CPU and the
 * database server's apart, and from pg_stat_statements and the WAL position, the statements
 * (each one round trip) and WAL bytes per delivery. Deliveries are the rows the claim inserted
 * (the bursts' warm-ups included, as in the statements and WAL).
 */
function storeFigures(bursts: LoadResult[], costs: ReturnType<typeof countersDelta>[]) {
  const perRequest = (f: (x: LoadResult) => number) => Math.round(median(bursts.map((x) => (f(x) * 1000) / Math.max(1, x.sent))));
  const byStatement = new Map<string, { calls: number; rows: number }>();
  for (const c of costs) {
    for (const [query, v] of c.statements) {
      const seen = byStatement.get(query) ?? { calls: 0, rows: 0 };
      byStatement.set(query, { calls: seen.calls + v.calls, rows: seen.rows + v.rows });
    }
  }
  const claimed = [...byStatement].find(([q]) => q.includes('insert into deliveries'))?.[1].rows ?? 0;
  const deliveries = Math.max(1, claimed);
  const calls = [...byStatement.values()].reduce((a, v) => a + v.calls, 0);
  const wal = costs.reduce((a, c) => a + c.walBytes, 0);
  return {
    replica_cpu_us_per_request: perRequest((x) => x.serverCpuMs ?? 0),
    postgres_cpu_us_per_request: perRequest((x) => x.storeCpuMs ?? 0),
    postgres_cpu_share: round(median(bursts.map((x) => (x.storeCpuMs ?? 0) / x.elapsedMs))),
    host_busy_share: round(median(bursts.map((x) => x.hostBusyShare))),
    deliveries_measured: claimed,
    round_trips_per_delivery: round(calls / deliveries),
    wal_bytes_per_delivery: Math.round(wal / deliveries),
    // Per 1,000 deliveries, by statement (its first line): calls, and rows returned or changed.
    statements_per_1000_deliveries: Object.fromEntries(
      [...byStatement]
        .sort((a, b) => b[1].calls - a[1].calls)
        .map(([query, v]) => [statementName(query), { calls: round((v.calls * 1000) / deliveries), rows: round((v.rows * 1000) / deliveries) }]),
    ),
  };
}

/** A statement's short name: its first line, up to 60 characters. */
const statementName = (query: string) => query.split('\n')[0]!.trim().slice(0, 60);

/**
 * The load idle replicas put on PostgreSQL: before any delivery (after a settle from their
 * start), statements per second from all replicas, and the database server's CPU, over IDLE_MS.
 */
async function idleLoad(postgres: BenchPostgres, targets: Running[]) {
  await new Promise((r) => setTimeout(r, 3000));
  const read = async () => Promise.all(targets.map((r) => postgres.counters(dbName(r.spec.name))));
  const before = await read();
  const cpuBefore = treeCpuMs(postgres.pid());
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, IDLE_MS));
  const after = await read();
  const seconds = (performance.now() - t0) / 1000;
  const cpuMs = treeCpuMs(postgres.pid()) - cpuBefore;
  const deltas = after.map((a, i) => countersDelta(before[i] as StoreCounters, a));
  const statements = deltas.reduce((a, d) => a + [...d.statements.values()].reduce((x, v) => x + v.calls, 0), 0);
  const replicas = targets.reduce((a, r) => a + r.replicas.length, 0);
  return {
    replicas,
    seconds: round(seconds),
    statements_per_second_per_replica: round(statements / seconds / replicas),
    postgres_cpu_share: round(cpuMs / 1000 / seconds),
    // The WAL position is the cluster's: what all the idle replicas wrote together.
    wal_bytes_per_second: Math.round(deltas[0]!.walBytes / seconds),
    by_statement: Object.fromEntries(
      deltas.flatMap((d) => [...d.statements]).reduce((m, [q, v]) => m.set(statementName(q), (m.get(statementName(q)) ?? 0) + v.calls), new Map<string, number>()),
    ),
  };
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
  /** The whole host's busy share of all its cores over the bursts. */
  host_busy_share: number;
  /** The busy share of the cores the target runs on (its `cores`; the whole host when unpinned). */
  target_cores_busy_share: number;
  saturated: boolean;
  /** When not saturated: who set the pace instead. */
  limited_by?: 'host' | 'client' | 'server_waits' | 'shared_cores';
}

/**
 * Whether the server was the bottleneck during its full-load bursts. Below SATURATED, the
 * cause: the client using its whole core; else its cores busy with other processes (the
 * database server or sibling replicas sharing them by design: `shared_cores`; anything else:
 * `host`); else the server waited with its cores idle (fsync, the database's round trips and
 * commits, too few requests in flight). Its main thread also waits for a CPU while its own
 * threads (garbage collection) run, so that wait alone does not mean a busy host.
 */
function saturationOf(bursts: LoadResult[], spec: TargetSpec): Saturation {
  const m = (f: (x: LoadResult) => number) => round(median(bursts.map(f)));
  const replicas = spec.replicas ?? 1;
  const sat: Saturation = {
    server_cpu_share: m((x) => x.serverCpuShare ?? 0),
    main_thread_on_cpu: m((x) => x.serverMainThread?.onCpu ?? 0),
    main_thread_waiting_for_cpu: m((x) => x.serverMainThread?.waitingForCpu ?? 0),
    client_cpu_share: m((x) => x.clientCpuShare),
    client_waiting_for_cpu: m((x) => x.clientWaitingForCpu),
    client_cpu_us_per_request: m((x) => (x.clientCpuShare * x.elapsedMs * 1000) / Math.max(1, x.sent)),
    host_busy_share: m((x) => x.hostBusyShare),
    target_cores_busy_share: m((x) => {
      const cores = twoCores ? (spec.cores ?? '0').split(',').map(Number) : [];
      return cores.length === 0 ? x.hostBusyShare : cores.reduce((a, c) => a + (x.coreBusyShare[c] ?? 0), 0) / cores.length;
    }),
    saturated: false,
  };
  // Replicas: each should use its core (two replicas near 2).
  sat.saturated = sat.server_cpu_share >= SATURATED * replicas;
  if (!sat.saturated) {
    if (sat.client_cpu_share >= SATURATED) sat.limited_by = 'client';
    // Its cores were busy, but not with it: with its database server or sibling replicas by design, else other work on the host.
    else if (sat.target_cores_busy_share >= SATURATED) sat.limited_by = spec.postgres || replicas > 1 ? 'shared_cores' : 'host';
    else sat.limited_by = 'server_waits';
  }
  return sat;
}

function warnUnsaturated(name: string, s: Saturation) {
  const why = {
    host: 'its core was busy with other processes (a busy host: rerun when it is quiet)',
    client: 'the load client used its whole core: the client, not the server, set the pace',
    shared_cores:
      'every core of the host was busy: its replicas share them with the database server and the load client, so this is the machine\'s limit, not the replicas\' (docs/performance.md: what separate machines would give)',
    server_waits: 'its core sat idle while it waited (fsync, the database server\'s round trips and commits) or had too few requests in flight',
  }[s.limited_by!];
  const pct = (x: number) => `${Math.round(x * 100)}%`;
  console.warn(
    `WARNING: ${name} used ${pct(s.server_cpu_share)} of a core at full load (< ${pct(SATURATED)} a replica): its req/s is not its CPU limit; ${why}. ` +
      `(its cores busy ${pct(s.target_cores_busy_share)}; server main thread on CPU ${pct(s.main_thread_on_cpu)}, waiting for a CPU ${pct(s.main_thread_waiting_for_cpu)}; ` +
      `client on CPU ${pct(s.client_cpu_share)}, waiting ${pct(s.client_waiting_for_cpu)}, ${s.client_cpu_us_per_request} µs/request)`,
  );
}

function printTable(report: { targets: Record<string, unknown>; ratios: Record<string, number | null>; steal_percent: number }) {
  const rows = Object.entries(report.targets).map(([name, v]) => {
    const f = v as Record<string, number>;
    const share = (v as { saturation: Saturation }).saturation.server_cpu_share;
    return [name, f.rps, f.p50_ms, f.p99_ms, f.max_ms, f.fixed_rate_p99_ms, f.server_cpu_us_per_request, share, f.rss_at_rest_mb, f.rss_after_bursts_mb, f.peak_rss_mb, f.non_200].map(String);
  });
  const head = ['target', 'req/s', 'p50 ms', 'p99 ms', 'max ms', 'p99@1k/s', 'cpu µs/req', 'cpu share', 'rest MB', 'RSS MB', 'peak MB', 'non-200'];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padStart(widths[i]!)).join('  ');
  console.log([line(head), ...rows.map(line)].join('\n'));
  const measured = Object.fromEntries(Object.entries(report.ratios).filter(([, v]) => v !== null));
  console.log(`ratios: ${JSON.stringify(measured)}   host steal: ${report.steal_percent}%`);
}

await main();
