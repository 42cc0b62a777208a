/**
 * `node --import tsx bench/profile.ts [--target=podhook] [--seconds=10] [--rate=N] [--dir=DIR]`:
 * a CPU profile of one bench target under the bench's load, and where its time goes.
 * `--alloc`: what it allocates instead (V8's sampling heap profiler, the objects the garbage
 * collector freed included: bench/alloc-sampler.mjs), over 4 s in the middle of the load;
 * `--retained`: what of that is still alive at the end of those 4 s; `--promoted`: what outlived
 * the young generation's collections (promoted, or still alive) over those 4 s.
 * `--gc`: no profile; V8's own account of its garbage collection over the measured load
 * (`--trace-gc-nvp`): bytes allocated, surviving a scavenge and promoted to the old generation
 * per request, and the main thread's pauses per request, scavenges and mark-compacts apart.
 *
 * The target runs as in `npm run bench` (podhook as `npm start` runs it, pinned to core 0, the
 * bench's environment) with `--cpu-prof`, after a warm-up; the load client (core 1) sends full
 * load (32 connections) or `--rate` requests a second for `--seconds`; then the target is stopped
 * with SIGTERM so node writes the profile (`DIR/<target>.cpuprofile`, default a temporary
 * directory: open it in Chrome DevTools or speedscope for a flame graph). It prints
 * bench/profile-summary.ts's reading of it: time by package or source file, the functions with
 * the most self time, and the top-down tree; the same for any `.cpuprofile` given to that script.
 * Targets: podhook, group-commit-podhook-work, group-commit, limit; `--base=DIR` profiles the
 * podhook build in DIR.
 */
import { mkdirSync, mkdtempSync, readdirSync, renameSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { aimAt, load, loadAsync, podhookArgs, ROOT, startTarget, type TargetSpec } from './harness.js';
import type { LoadResult } from './load-client.js';
import { summarize } from './profile-summary.js';

const option = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const target = option('target') ?? 'podhook';
const seconds = Number(option('seconds') ?? 10);
const rate = option('rate') ? Number(option('rate')) : undefined;
const dir = resolve(option('dir') ?? mkdtempSync(join(tmpdir(), 'podhook-profile-')));
const base = option('base');
/** `--node=FLAG,FLAG`: node options for podhook after `npm start`'s own (a later one wins). */
const nodeFlags = (option('node') ?? '').split(',').filter(Boolean);

const mode = process.argv.includes('--alloc') ? 'alloc' : process.argv.includes('--retained') ? 'retained' : process.argv.includes('--promoted') ? 'promoted' : process.argv.includes('--gc') ? 'gc' : 'cpu';
const profDir = mkdtempSync(join(tmpdir(), 'podhook-cpuprof-'));
const prof = mode === 'cpu' ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : mode === 'gc' ? ['--trace-gc-nvp'] : ['--import', './bench/alloc-sampler.mjs'];
const heapProfile = join(dir, `${target}.${mode}.heapprofile`);
const allocEnv: Record<string, string> = mode === 'cpu' || mode === 'gc' ? {} : { ALLOC_PROFILE: heapProfile, ALLOC_COLLECTED: { alloc: '1', promoted: 'major', retained: '0' }[mode] };
const EXIT_ON_SIGTERM = ['--import', 'data:text/javascript,process.on("SIGTERM",()=>process.exit(0))'];
const script = base ? join(resolve(base), 'dist/src/cli/run.js') : 'dist/src/cli/run.js';
const SPECS: Record<string, TargetSpec> = {
  podhook: { name: 'podhook', args: podhookArgs(...prof, ...nodeFlags).map((a) => (a === 'dist/src/cli/run.js' ? script : a)), env: { ...envOption(), ...allocEnv } },
  'group-commit-podhook-work': { name: 'group-commit-podhook-work', args: [...prof, ...EXIT_ON_SIGTERM, '--import', 'tsx', 'bench/targets/group-commit.ts'], env: { GROUP_COMMIT_WORK: 'podhook', ...allocEnv } },
  'group-commit': { name: 'group-commit', args: [...prof, ...EXIT_ON_SIGTERM, '--import', 'tsx', 'bench/targets/group-commit.ts'], env: allocEnv },
  limit: { name: 'limit', args: [...prof, ...EXIT_ON_SIGTERM, '--import', 'tsx', 'bench/targets/limit.ts'], env: allocEnv },
};

function envOption(): Record<string, string> {
  return Object.fromEntries((option('env') ?? '').split(',').filter(Boolean).map((kv) => kv.split('=') as [string, string]));
}

async function main() {
  const spec = SPECS[target];
  if (!spec) throw new Error(`unknown target ${target}: one of ${Object.keys(SPECS).join(', ')}`);
  if (target === 'podhook' && !base && spawnSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' }).status !== 0) throw new Error('npm run build failed');
  mkdirSync(dir, { recursive: true });
  const work = mkdtempSync(join(tmpdir(), 'podhook-profile-db-'));
  const running = await startTarget(spec, join(work, `${target}.db`));
  try {
    load({ ...aimAt(running), durationMs: 2000, concurrency: 32 }); // warm-up: JIT, page cache
    if (mode === 'gc') {
      const from = running.output().length;
      const result = load({ ...aimAt(running), durationMs: seconds * 1000, concurrency: rate ? 64 : 32, rate, serverPids: [running.child.pid!], poolSize: seconds * 10_000 });
      console.log(gcReport(target, result, running.output().slice(from)));
      return;
    }
    if (mode !== 'cpu') {
      const measured = loadAsync({ ...aimAt(running), durationMs: Math.max(seconds, 8) * 1000, concurrency: rate ? 64 : 32, rate, poolSize: Math.max(seconds, 8) * 10_000 });
      await sleep(3000); // the client started, signed its deliveries and is about 1.5 s into its load
      running.child.kill('SIGUSR2');
      await sleep(4000);
      running.child.kill('SIGUSR2');
      const result = await measured;
      for (let i = 0; i < 50 && !existsSync(heapProfile); i++) await sleep(100);
      console.log(`${target}: ${result.rps} req/s\nprofile: ${heapProfile}\n`);
      console.log(summarize(heapProfile));
      return;
    }
    // Enough deliveries signed for the whole run at up to 10,000 a second: a repeated one would be a duplicate, another path.
    const result = load({ ...aimAt(running), durationMs: seconds * 1000, concurrency: rate ? 64 : 32, rate, serverPids: [running.child.pid!], poolSize: seconds * 10_000 });
    console.log(
      `${target}: ${result.rps} req/s, p99 ${result.latencyMs.p99} ms, server CPU ${Math.round(((result.serverCpuMs ?? 0) * 1000) / result.sent)} µs/request, ${Math.round((result.serverCpuShare ?? 0) * 100)}% of a core`,
    );
  } finally {
    // node writes the profile when the process exits, not when a signal kills it: podhook
    // shuts down on SIGTERM; the hand-written targets get an exit on SIGTERM (EXIT_ON_SIGTERM).
    await new Promise<void>((done) => {
      running.child.once('exit', () => done());
      running.child.kill('SIGTERM');
    });
  }
  if (mode !== 'cpu') return; // reported above
  const file = readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'));
  if (!file) throw new Error(`no profile written (the target did not exit cleanly): ${running.output().slice(-2000)}`);
  const path = join(dir, `${target}.cpuprofile`);
  renameSync(join(profDir, file), path);
  console.log(`profile: ${path}\n`);
  console.log(summarize(path));
}

/** Sums `--trace-gc-nvp` lines (one per collection, `key=value` fields) over the measured load. */
function gcReport(name: string, result: LoadResult, trace: string): string {
  const lines = trace.split('\n').filter((l) => l.includes(' pause='));
  const field = (l: string, key: string) => Number(new RegExp(`\\b${key}=([\\d.]+)`).exec(l)?.[1] ?? 0);
  const scavenges = lines.filter((l) => / gc=s /.test(l));
  const marks = lines.filter((l) => / gc=(mc|mmc|ms) /.test(l));
  const perRequest = (ls: string[], key: string) => ls.reduce((a, l) => a + field(l, key), 0) / Math.max(1, result.sent);
  const kb = (x: number) => `${(x / 1024).toFixed(1)} KB`;
  const us = (ms: number) => `${(ms * 1000).toFixed(1)} µs`;
  return [
    `${name}: ${result.rps} req/s, p99 ${result.latencyMs.p99} ms, server CPU ${Math.round(((result.serverCpuMs ?? 0) * 1000) / result.sent)} µs/request`,
    `per request: allocated ${kb(perRequest(scavenges, 'allocated'))}, survived a scavenge ${kb(perRequest(scavenges, 'new_space_survived'))}, promoted ${kb(perRequest(scavenges, 'promoted'))}`,
    `main-thread pauses per request: scavenges ${us(perRequest(scavenges, 'pause'))} (${scavenges.length}), mark-compacts ${us(perRequest(marks, 'pause'))} (${marks.length})`,
  ].join('\n');
}

await main();
