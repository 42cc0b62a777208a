/**
 * `node --import tsx bench/ab.ts --builds=a=DIR,b=DIR[,…]`: podhook builds of several commits
 * measured in paired rounds, for an A/B (or a bisect) on a shared host. `b=DIR#--flag#--flag`
 * runs that build with node options after `npm start`'s own (e.g. `s16=.#--max-semi-space-size=16`).
 *
 * Each build (a git worktree of a commit, `npm run build` run there; `.` is this checkout, built
 * first) runs as `npm start` runs podhook, pinned to core 0, the load client on core 1, as in
 * `npm run bench`. Every round runs one full-load burst per build, in an order that rotates
 * each round and reverses every other one, so no build always follows the same neighbour or
 * meets the host at the same moment. What is compared is each round's ratio to the first build
 * (CPU per request, req/s), a pair measured seconds apart: the host's load moves both sides
 * of a pair alike, where medians of separate runs move by 10% or more. Prints each build's
 * medians and its paired ratios to the first build: their geometric mean with a 95% interval,
 * median and range; `--out=FILE` keeps every round.
 *
 * Options: `--rounds=N` (default 8), `--burst-ms=MS` (3000), `--rate` (a 1,000 req/s phase per
 * build and round too: its p99), `--targets=NAME[@DIR],…` (bench/run.ts targets measured
 * alongside, e.g. group-commit-podhook-work; `@DIR`: its script as in DIR, a worktree of another
 * commit; with no `--builds`, the first target is the one compared against), `--env=K=V,…`
 * (for every build).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { aimAt, burst, load, median, podhookArgs, ROOT, round, rssMb, startTarget, type Running, type TargetSpec } from './harness.js';

const option = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const others = (option('targets') ?? '').split(',').filter(Boolean);
const builds = (option('builds') ?? (others.length > 0 ? '' : 'this=.')).split(',').filter(Boolean).map((b) => {
  const [label, where] = b.includes('=') ? [b.slice(0, b.indexOf('=')), b.slice(b.indexOf('=') + 1)] : [b, b];
  // `label=DIR#--flag#--flag`: node options for that build after `npm start`'s own (a later one wins).
  const [dir, ...nodeFlags] = where.split('#') as [string, ...string[]];
  return { label, dir: resolve(ROOT, dir), nodeFlags };
});
const ROUNDS = Number(option('rounds') ?? 8);
const BURST_MS = Number(option('burst-ms') ?? 3000);
const withRate = process.argv.includes('--rate');
const env = Object.fromEntries((option('env') ?? '').split(',').filter(Boolean).map((kv) => kv.split('=') as [string, string]));
const out = option('out');
const CONCURRENCY = 32;

const OTHER_TARGETS: Record<string, TargetSpec> = {
  limit: { name: 'limit', args: ['--import', 'tsx', 'bench/targets/limit.ts'] },
  'group-commit-podhook-work': { name: 'group-commit-podhook-work', args: ['--import', 'tsx', 'bench/targets/group-commit.ts'], env: { GROUP_COMMIT_WORK: 'podhook' } },
};

interface Sample {
  cpuUsPerReq: number;
  rps: number;
  p99: number;
  cpuShare: number;
  waiting: number;
  rssMb: number;
  rateP99?: number;
}

async function main() {
  if (builds.some((b) => b.dir === resolve(ROOT))) {
    if (spawnSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' }).status !== 0) throw new Error('npm run build failed');
  }
  const specs: TargetSpec[] = [
    ...builds.map(({ label, dir, nodeFlags }) => ({
      name: label,
      args: podhookArgs(...nodeFlags).map((a) => (a === 'dist/src/cli/run.js' ? join(dir, a) : a)),
      env,
    })),
    ...others.map((entry) => {
      const [name, dir] = entry.split('@') as [string, string | undefined];
      const spec = OTHER_TARGETS[name];
      if (!spec) throw new Error(`unknown target ${name} (one of ${Object.keys(OTHER_TARGETS).join(', ')})`);
      return dir ? { ...spec, name: `${name}@${basename(dir)}`, args: spec.args.map((a) => (a.startsWith('bench/') ? join(resolve(ROOT, dir), a) : a)) } : spec;
    }),
  ];
  const dir = mkdtempSync(join(tmpdir(), 'podhook-ab-'));
  const running: Running[] = [];
  try {
    for (const spec of specs) running.push(await startTarget(spec, join(dir, `${spec.name}.db`)));
    for (const r of running) load({ ...aimAt(r), durationMs: 1000, concurrency: CONCURRENCY });
    const samples = new Map<string, Sample[]>(running.map((r) => [r.spec.name, []]));
    for (let i = 0; i < ROUNDS; i++) {
      const rotated = [...running.slice(i % running.length), ...running.slice(0, i % running.length)];
      const order = i % 2 === 0 ? rotated : rotated.reverse();
      const roundSamples = new Map<string, Sample>();
      for (const r of order) {
        const x = burst(r, { durationMs: BURST_MS, concurrency: CONCURRENCY });
        roundSamples.set(r.spec.name, {
          cpuUsPerReq: x.cpuUsPerRequest,
          rps: x.rps,
          p99: x.latencyMs.p99,
          cpuShare: x.serverCpuShare ?? 0,
          waiting: x.serverMainThread?.waitingForCpu ?? 0,
          rssMb: rssMb(r.child.pid!),
        });
      }
      if (withRate) {
        for (const r of order) roundSamples.get(r.spec.name)!.rateP99 = load({ ...aimAt(r), durationMs: BURST_MS, rate: 1000, concurrency: 64 }).latencyMs.p99;
      }
      for (const [name, s] of roundSamples) samples.get(name)!.push(s);
      const first = roundSamples.get(running[0]!.spec.name)!;
      process.stderr.write(
        `round ${i + 1}/${ROUNDS}: ${[...roundSamples]
          .map(([name, s]) => `${name} ${s.cpuUsPerReq} µs/req (×${(s.cpuUsPerReq / first.cpuUsPerReq).toFixed(3)}) ${s.rps}/s${s.rateP99 === undefined ? '' : ` p99@1k ${s.rateP99}`}`)
          .join(' | ')}\n`,
      );
    }
    report(running, samples);
  } finally {
    for (const r of running) r.child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Each build's medians, and its paired ratios to the first build: median, range, and the
 * geometric mean with its 95% confidence interval (mean ± 1.96 standard errors of the log
 * ratios), which says whether a difference is more than the host's noise.
 */
function report(running: Running[], samples: Map<string, Sample[]>) {
  {
    const base = samples.get(running[0]!.spec.name)!;
    const summary = running.map((r) => {
      const s = samples.get(r.spec.name)!;
      const ratios = (f: (x: Sample) => number) => s.map((x, i) => f(x) / f(base[i]!));
      const spread = (xs: number[]) => {
        const logs = xs.map(Math.log);
        const mean = logs.reduce((a, b) => a + b, 0) / logs.length;
        const se = Math.sqrt(logs.reduce((a, b) => a + (b - mean) ** 2, 0) / Math.max(1, logs.length - 1) / logs.length);
        return {
          median: round3(median(xs)),
          min: round3(Math.min(...xs)),
          max: round3(Math.max(...xs)),
          geomean: round3(Math.exp(mean)),
          ci95: [round3(Math.exp(mean - 1.96 * se)), round3(Math.exp(mean + 1.96 * se))],
        };
      };
      return {
        build: r.spec.name,
        dir: builds.find((b) => b.label === r.spec.name)?.dir,
        cpu_us_per_request: median(s.map((x) => x.cpuUsPerReq)),
        rps: median(s.map((x) => x.rps)),
        p99_ms: round(median(s.map((x) => x.p99))),
        ...(withRate ? { p99_at_1000_ms: round(median(s.map((x) => x.rateP99!))) } : {}),
        server_cpu_share: round(median(s.map((x) => x.cpuShare))),
        main_thread_waiting_for_cpu: round(median(s.map((x) => x.waiting))),
        rss_after_bursts_mb: round(median(s.map((x) => x.rssMb))),
        cpu_vs_first: spread(ratios((x) => x.cpuUsPerReq)),
        rps_vs_first: spread(ratios((x) => x.rps)),
      };
    });
    for (const s of summary) {
      console.log(
        `${s.build.padEnd(28)} cpu ${String(s.cpu_us_per_request).padStart(4)} µs/req  ×${s.cpu_vs_first.geomean} (95% ${s.cpu_vs_first.ci95.join('–')}; median ×${s.cpu_vs_first.median}, range ${s.cpu_vs_first.min}–${s.cpu_vs_first.max})  ` +
          `req/s ${s.rps} ×${s.rps_vs_first.median} [${s.rps_vs_first.min}–${s.rps_vs_first.max}]  p99 ${s.p99_ms} ms` +
          `${s.p99_at_1000_ms === undefined ? '' : `  p99@1k ${s.p99_at_1000_ms} ms`}  share ${s.server_cpu_share} waiting ${s.main_thread_waiting_for_cpu}  RSS ${s.rss_after_bursts_mb} MB`,
      );
    }
    if (out) writeFileSync(out, `${JSON.stringify({ date: new Date().toISOString(), rounds: ROUNDS, burst_ms: BURST_MS, env, summary, samples: Object.fromEntries(samples) }, null, 2)}\n`);
  }
}

const round3 = (n: number) => Math.round(n * 1000) / 1000;

await main();
