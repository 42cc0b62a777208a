/**
 * `npm run bench`: podhook against what users would run instead, side by side in one run.
 *
 * Every target runs as its own process pinned to core 0 (`taskset`), the load client to core 1.
 * Rounds alternate short bursts across targets, and the median of each figure is reported with
 * the ratios podhook/limit and podhook/peer, since absolute figures wander on this shared host.
 * Writes bench/results/latest.json. `--quick` gives a rougher answer within about 60 s.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { LoadOptions, LoadResult } from './load-client.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SECRET = 'bench-secret-0123456789';
const quick = process.argv.includes('--quick');
const only = process.argv.find((a) => a.startsWith('--targets='))?.slice('--targets='.length).split(',');

interface TargetSpec {
  name: string;
  args: string[];
  env?: Record<string, string>;
}

const ALL_TARGETS: TargetSpec[] = [
  { name: 'limit', args: ['--import', 'tsx', 'bench/targets/limit.ts'] },
  { name: 'peer', args: ['--import', 'tsx', 'bench/targets/peer.ts'], env: { SQLITE_SYNC: 'FULL' } },
  { name: 'hono-insert-normal', args: ['--import', 'tsx', 'bench/targets/hono-insert.ts'], env: { SQLITE_SYNC: 'NORMAL' } },
  // podhook as shipped: what `npm start` runs (compiled by `npm run build` at the start of the bench).
  { name: 'podhook', args: ['dist/src/cli/run.js', 'serve'] },
  // Diagnostics (run with --targets=…): ingest alone, without per-delivery log lines, from sources via tsx.
  { name: 'podhook-ingest-only', args: ['dist/src/cli/run.js', 'serve'], env: { DISPATCHER: 'off' } },
  { name: 'podhook-warn-logs', args: ['dist/src/cli/run.js', 'serve'], env: { LOG_LEVEL: 'warn' } },
  { name: 'podhook-tsx', args: ['bin/podhook.js', 'serve'] },
];
const DEFAULT_TARGETS = ['limit', 'peer', 'hono-insert-normal', 'podhook'];

const ROUNDS = quick ? 2 : 5;
const BURST_MS = quick ? 2000 : 4000;
const RATE_MS = quick ? 2000 : 4000;
const CONCURRENCY = 32;
const FIXED_RATE = 1000;

const twoCores = cpus().length >= 2 && spawnSync('taskset', ['--version']).status === 0;
const pin = (core: number, cmd: string, args: string[]): [string, string[]] =>
  twoCores ? ['taskset', ['-c', String(core), cmd, ...args]] : [cmd, args];

interface Running {
  spec: TargetSpec;
  child: ChildProcess;
  url: string;
}

async function start(spec: TargetSpec, port: number, dir: string): Promise<Running> {
  const [cmd, args] = pin(0, process.execPath, spec.args);
  const child = spawn(cmd, args, {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      PORT: String(port),
      HOST: '127.0.0.1',
      DATABASE_PATH: join(dir, `${spec.name}.db`),
      SVC_WEBHOOK_SECRET: SECRET,
      ...spec.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let exited: number | null | undefined;
  // Keep draining the server's output (its log lines) so it never blocks on a full pipe.
  child.stdout!.on('data', (c: Buffer) => void (out.length < 10_000 && (out += c)));
  child.stderr!.on('data', (c: Buffer) => void (out.length < 10_000 && (out += c)));
  child.once('exit', (code) => (exited = code));
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (exited !== undefined) throw new Error(`${spec.name} exited ${exited}: ${out}`);
    if (Date.now() > deadline) throw new Error(`${spec.name} did not start: ${out}`);
    // Any HTTP answer means it listens (the comparison targets have no /healthz).
    if (await fetch(`http://127.0.0.1:${port}/`).then(() => true, () => false)) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return { spec, child, url: `http://127.0.0.1:${port}/webhooks` };
}

function load(options: LoadOptions): LoadResult {
  const [cmd, args] = pin(1, process.execPath, ['--import', 'tsx', 'bench/load-client.ts', JSON.stringify(options)]);
  const result = spawnSync(cmd, args, { cwd: ROOT, encoding: 'utf8', timeout: options.durationMs + 60_000 });
  if (result.status !== 0) throw new Error(`load client failed: ${result.stderr}`);
  return JSON.parse(result.stdout) as LoadResult;
}

/** CPU time (user + system) a process has used, in ms (from /proc/<pid>/stat, 100 Hz ticks). */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** Peak resident memory of a process (VmHWM), in MB. */
function peakRssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return Math.round(kb / 102.4) / 10;
}

/** CPU steal as a share of all CPU time between two /proc/stat readings. */
function cpuTimes(): number[] {
  return readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
}
function stealPercent(before: number[], after: number[]): number {
  const delta = after.map((v, i) => v - before[i]!);
  const total = delta.reduce((a, b) => a + b, 0);
  return total === 0 ? 0 : Math.round((delta[7]! / total) * 1000) / 10;
}

const round = (n: number) => Math.round(n * 100) / 100;
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? 0 : s.length % 2 ? s[s.length >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

async function main() {
  const targets = ALL_TARGETS.filter((t) => (only ?? DEFAULT_TARGETS).includes(t.name));
  if (targets.some((t) => t.args[0]!.startsWith('dist/'))) {
    const build = spawnSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
    if (build.status !== 0) throw new Error('npm run build failed');
  }
  const dir = mkdtempSync(join(tmpdir(), 'podhook-bench-'));
  const stealBefore = cpuTimes();
  const running: Running[] = [];
  try {
    let port = 41000 + Math.floor(Math.random() * 1000);
    for (const spec of targets) running.push(await start(spec, port++, dir));
    // Warm-up: JIT, SQLite page cache, connection pools.
    for (const r of running) load({ url: r.url, secret: SECRET, durationMs: 1000, concurrency: CONCURRENCY });

    const samples = new Map<string, { max: LoadResult[]; rate: LoadResult[]; cpuUsPerReq: number[] }>();
    for (const r of running) samples.set(r.spec.name, { max: [], rate: [], cpuUsPerReq: [] });
    for (let round = 0; round < ROUNDS; round++) {
      // Alternate the order each round so no target always runs right after the same neighbour.
      const order = round % 2 === 0 ? running : [...running].reverse();
      for (const r of order) {
        const s = samples.get(r.spec.name)!;
        const cpuBefore = cpuMs(r.child.pid!);
        const result = load({ url: r.url, secret: SECRET, durationMs: BURST_MS, concurrency: CONCURRENCY });
        // Server CPU per request: steadier than req/s on a shared host (another tenant's load
        // lowers throughput, not the work one request costs). Includes background dispatch.
        s.cpuUsPerReq.push(Math.round(((cpuMs(r.child.pid!) - cpuBefore) * 1000) / Math.max(1, result.sent)));
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
      };
    }
    const fig = (name: string) => results[name] as { rps: number } | undefined;
    const ratio = (a?: { rps: number }, b?: { rps: number }) => (a && b && b.rps ? Math.round((a.rps / b.rps) * 1000) / 1000 : null);
    const report = {
      date: new Date().toISOString(),
      machine: { cpus: cpus().length, model: cpus()[0]?.model, pinned: twoCores, node: process.version },
      settings: { rounds: ROUNDS, burst_ms: BURST_MS, concurrency: CONCURRENCY, body_bytes: 1024, fixed_rate: FIXED_RATE, quick },
      steal_percent: stealPercent(stealBefore, cpuTimes()),
      targets: results,
      ratios: {
        podhook_vs_limit: ratio(fig('podhook'), fig('limit')),
        podhook_vs_peer: ratio(fig('podhook'), fig('peer')),
      },
    };
    mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
    writeFileSync(join(ROOT, 'bench/results/latest.json'), `${JSON.stringify(report, null, 2)}\n`);
    printTable(report);
  } finally {
    for (const r of running) r.child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}

function printTable(report: { targets: Record<string, unknown>; ratios: Record<string, number | null>; steal_percent: number }) {
  const rows = Object.entries(report.targets).map(([name, v]) => {
    const f = v as Record<string, number>;
    return [name, f.rps, f.p50_ms, f.p99_ms, f.max_ms, f.fixed_rate_p99_ms, f.server_cpu_us_per_request, f.peak_rss_mb, f.non_200].map(String);
  });
  const head = ['target', 'req/s', 'p50 ms', 'p99 ms', 'max ms', 'p99@1k/s', 'cpu µs/req', 'RSS MB', 'non-200'];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padStart(widths[i]!)).join('  ');
  console.log([line(head), ...rows.map(line)].join('\n'));
  console.log(`ratios: ${JSON.stringify(report.ratios)}   host steal: ${report.steal_percent}%`);
}

await main();
