/**
 * CPU time per delivery of podhook's Worker in workerd (Cloudflare bills a Worker's CPU ms),
 * against a floor: a bare Hono Worker answering 200 to a POST (bench/targets/worker-floor.ts),
 * the Worker counterpart of the Node bench's `limit`. Issue 30, "Cost per delivery".
 *
 *   node --import tsx bench/worker-cpu.ts [--deliveries=N] [--concurrency=C] [--rounds=R]
 *     [--body-bytes=B] [--warm-up=N] [--against=<git ref>] [--ingest-only] [--no-split]
 *     [--no-save | --out=<file>] [--profiles=<dir>] [--split-rounds=N]
 *
 * Both Workers are bundled as `wrangler deploy --dry-run` bundles them (wrangler.toml's
 * compatibility date, flags, vars and D1 binding for podhook), and each runs in its own workerd
 * process under Miniflare, reached through a direct socket (not Miniflare's entry worker), with
 * a local D1 database for podhook (drizzle/sqlite/ applied first). After an unmeasured warm-up,
 * each round sends N unique, validly signed 1 KiB `pod.status.changed` deliveries (C in flight,
 * HTTP/1.1 keep-alive over 127.0.0.1) to each Worker in turn (the order alternates by round), and
 * for podhook waits until every one of them is dispatched: the Worker runs the example handlers
 * under `ctx.waitUntil` after the 200, and a delivery is done when its row leaves `queued`
 * (polled in D1 every 50 ms; the polls' own cost, calibrated while idle, is subtracted), then
 * 250 ms more for what is left under waitUntil. `--ingest-only` adds podhook with DISPATCHER=off
 * to the rotation (a diagnostic: what ingest alone costs). `--against=<ref>` adds podhook as it is
 * at that commit (`git archive`, bundled the same way, its own workerd and D1) as
 * `podhook-before`: a paired before/after comparison of a change, both measured in one run.
 *
 * CPU time: the workerd process's user + system time summed over its threads
 * (/proc/<pid>/task/<tid>/schedstat, ns; /proc/<pid>/stat's 10 ms ticks kept as a check) over a
 * round, minus its idle CPU over the same wall time (measured just before), divided by N.
 * workerd reports no per-request CPU locally (a tail worker's `cpuTime` and `wallTime` are 0
 * outside Cloudflare), hence the process figure. It includes local D1: in workerd, the simulated
 * database is a SQLite Durable Object in the same process and thread, which Cloudflare does not
 * bill as the Worker's CPU. It also includes workerd's own HTTP parsing and the console output of
 * podhook's log lines (LOG_LEVEL=info, as wrangler.toml ships it).
 *
 * Then (unless --no-split) one more round of each (--split-rounds=N: N, the order rotating, and
 * the median taken), on fresh processes with the inspector on,
 * splits the CPU by isolate with V8's sampling profiler (profileIsolates): the Worker's own
 * isolate (D1's client wrapper included, as on Cloudflare), D1's simulator isolates, and the
 * remainder outside any isolate. Approximate (sampled), but it brackets the billable part.
 *
 * workerd is pinned to core 0 and this process to core 1 when `taskset` exists, as in the Node
 * bench. Writes bench/results/worker-cpu-<date>.json unless --no-save.
 */
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { Miniflare, type WorkerOptions } from 'miniflare';
import type { Readable } from 'node:stream';
import { WebSocket } from 'undici';
import { unstable_getMiniflareWorkerOptions } from 'wrangler';
import { eventBody } from './load-client.js';
import { applyMigrations, bundle, numberOption, option, checkout, ROOT, send, startWorkerd, type D1, type Signed } from './workerd-harness.js';
import { signDelivery } from '../src/testing/sign.js';

const deliveries = numberOption('deliveries', 2000);
const concurrency = numberOption('concurrency', 16);
const rounds = numberOption('rounds', 5);
const bodyBytes = numberOption('body-bytes', 1024);
const warmUp = numberOption('warm-up', 300);
const save = !process.argv.includes('--no-save');
const split = !process.argv.includes('--no-split');
const ingestOnly = process.argv.includes('--ingest-only');
const against = option('against');
const outFile = option('out');
const profilesDir = option('profiles');
const splitRounds = numberOption('split-rounds', 1);
const SETTLE_MS = 250;
const SECRET = 'whsec_bench_worker_cpu_0c7e1f';
const EVENT_TYPE = 'pod.status.changed';


const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const round1 = (x: number) => Math.round(x * 10) / 10;
const round3 = (x: number) => Math.round(x * 1000) / 1000;

/** utime + stime of a whole process (every thread, exited ones too), in ms (100 Hz ticks). */
function processCpuMs(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(f[11]) + Number(f[12])) * 10;
}

/** Per-thread CPU (ns, from schedstat) by thread name: to see where in workerd the time goes. */
function threadCpuNs(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const name = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
      const ns = Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
      out.set(`${name}#${tid}`, ns);
    } catch {
      // exited while listing
    }
  }
  return out;
}

/** The host's steal as a percentage of all CPU time between two /proc/stat readings. */
function cpuTimes() {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  return { total: f.reduce((a, b) => a + b, 0), steal: f[7] ?? 0 };
}

interface Target {
  name: 'podhook' | 'podhook-before' | 'floor' | 'podhook-ingest-only';
  /** Runs handlers after the response: the round waits until no delivery is queued. */
  dispatches: boolean;
  mf: Miniflare;
  url: URL;
  pid: number;
  db?: D1;
}

async function startTarget(name: Target['name'], scriptPath: string, base: WorkerOptions, inspectorPort?: number): Promise<Target> {
  const { mf, url, pid } = await startWorkerd({ name, scriptPath, options: base, inspectorPort });
  const dispatches = name === 'podhook' || name === 'podhook-before';
  const target: Target = { name, mf, url, pid, dispatches };
  if (name !== 'floor') target.db = (await mf.getD1Database('DB')) as unknown as D1;
  return target;
}

async function signBatch(n: number): Promise<Signed[]> {
  const out: Signed[] = [];
  for (let i = 0; i < n; i++) {
    const id = randomUUID();
    const d = await signDelivery({ secret: SECRET, type: EVENT_TYPE, id, body: eventBody(bodyBytes, id) });
    out.push({ headers: { ...d.headers, 'content-length': String(d.body.byteLength) }, body: Buffer.from(d.body) });
  }
  return out;
}

const PENDING_SQL = "SELECT count(*) AS n FROM deliveries WHERE status = 'queued'";
const pending = async (db: D1) => ((await db.prepare(PENDING_SQL).first<{ n: number }>())?.n ?? 0);

/** Polls until no delivery is queued (every one dispatched); returns how many polls it took. */
async function waitDispatched(db: D1, timeoutMs = 60_000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  let polls = 0;
  for (;;) {
    polls++;
    if ((await pending(db)) === 0) return polls;
    if (Date.now() > deadline) throw new Error('deliveries still queued after 60 s');
    await sleep(50);
  }
}

/** workerd's CPU time so far, in ms, summed over its threads (schedstat, ns resolution). */
const threadsCpuMs = (pid: number) => [...threadCpuNs(pid).values()].reduce((a, b) => a + b, 0) / 1e6;

/** The workerd's CPU while idle, in ms per second of wall time. */
async function idleRate(pid: number, ms = 1000): Promise<number> {
  const c0 = threadsCpuMs(pid);
  const t0 = performance.now();
  await sleep(ms);
  return ((threadsCpuMs(pid) - c0) / (performance.now() - t0)) * 1000;
}

/** What one poll of D1 costs workerd, in ms: 100 polls while idle, minus idle. */
async function pollCostMs(target: Target): Promise<number> {
  const rate = await idleRate(target.pid);
  const c0 = threadsCpuMs(target.pid);
  const t0 = performance.now();
  for (let i = 0; i < 100; i++) await pending(target.db!);
  const wall = performance.now() - t0;
  return Math.max(0, (threadsCpuMs(target.pid) - c0 - (rate * wall) / 1000) / 100);
}

const freePort = async () => {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  return port;
};

interface IsolateTime {
  samples?: number;
  wall_ms?: number;
  /** Samples in JavaScript (and native code it called: SQLite under a D1 query), ms. */
  js_ms: number;
  gc_ms: number;
  /** V8's "(program)": in the isolate but outside JavaScript (the runtime's own work). */
  program_ms: number;
  /** The functions the most samples were in (self time), for the isolates that did work. */
  top_self?: string[];
  /** The functions the most samples were under (their callees included). */
  top_total?: string[];
}

/**
 * Runs `work` with V8's sampling profiler on each of workerd's isolates (through its inspector)
 * and counts each profile's non-idle samples: which isolate the CPU went to. D1's client (the
 * `cloudflare-internal:d1-api` wrapper) runs in the Worker's own isolate, as on Cloudflare; the
 * simulated database is two more isolates: `d1:db`, Miniflare's Durable Object running SQLite,
 * and `d1:db:<id>`, the small worker routing to it. Approximate: the sampler's interval is
 * nominal, and time outside any isolate (workerd's native HTTP, I/O and RPC between isolates,
 * SQLite's commits, background threads, the samplers themselves) is only the remainder.
 */
const SAMPLE_US = 500;

async function profileIsolates(port: number, work: () => Promise<void>, label: string): Promise<Record<string, IsolateTime>> {
  // The Worker's isolate and D1's two (the others, Miniflare's plumbing, stay idle on this path);
  // each profiled isolate adds a sampling thread's wake-ups to the process.
  const list = ((await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as Array<{ id: string }>).filter(({ id }) => /^(core:user:|d1:)/.test(id));
  const sessions = await Promise.all(
    list.map(async ({ id }) => {
      const ws = new WebSocket(`ws://127.0.0.1:${port}/${id}`);
      await new Promise((resolve, reject) => {
        ws.addEventListener('open', resolve);
        ws.addEventListener('error', reject);
      });
      let seq = 0;
      const waiting = new Map<number, (result: any) => void>();
      ws.addEventListener('message', (event) => {
        const msg = JSON.parse(String(event.data));
        if (msg.id !== undefined) waiting.get(msg.id)?.(msg.result), waiting.delete(msg.id);
      });
      const call = (method: string, params: object = {}) =>
        new Promise<any>((resolve) => {
          waiting.set(++seq, resolve);
          ws.send(JSON.stringify({ id: seq, method, params }));
        });
      return { id, ws, call };
    }),
  );
  for (const s of sessions) {
    await s.call('Profiler.enable');
    await s.call('Profiler.setSamplingInterval', { interval: SAMPLE_US });
    await s.call('Profiler.start');
  }
  await work();
  const out: Record<string, IsolateTime> = {};
  for (const s of sessions) {
    const { profile } = await s.call('Profiler.stop');
    // `--profiles=<dir>`: each isolate's profile as a .cpuprofile (Chrome DevTools, speedscope).
    if (profilesDir) writeFileSync(join(profilesDir, `${label}-${s.id.replace(/[^\w.-]+/g, '_')}.cpuprofile`), JSON.stringify(profile));
    const kind = new Map<number, string>(profile.nodes.map((n: any) => [n.id, n.callFrame.functionName]));
    const frame = new Map<number, string>(
      profile.nodes.map((n: any) => [n.id, `${n.callFrame.functionName || '(anonymous)'} ${basename(n.callFrame.url || '')}:${n.callFrame.lineNumber + 1}`]),
    );
    const self = new Map<string, number>();
    const total = new Map<string, number>();
    const parent = new Map<number, number>();
    for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
    const t: IsolateTime = { js_ms: 0, gc_ms: 0, program_ms: 0 };
    profile.samples.forEach((node: number) => {
      // Sample count × interval, not timeDeltas: V8 skips a sample while another isolate holds
      // the thread, and the next delta then spans the gap (wall time, not this isolate's CPU).
      const ms = SAMPLE_US / 1000;
      const k = kind.get(node);
      if (k === '(idle)') return;
      self.set(frame.get(node)!, (self.get(frame.get(node)!) ?? 0) + 1);
      const seen = new Set<string>();
      for (let at: number | undefined = node; at !== undefined; at = parent.get(at)) seen.add(frame.get(at)!);
      for (const f of seen) total.set(f, (total.get(f) ?? 0) + 1);
      if (k === '(garbage collector)') t.gc_ms += ms;
      else if (k === '(program)') t.program_ms += ms;
      else t.js_ms += ms;
    });
    out[s.id] = { samples: profile.samples.length, wall_ms: round1((profile.endTime - profile.startTime) / 1000), js_ms: round1(t.js_ms), gc_ms: round1(t.gc_ms), program_ms: round1(t.program_ms),
      top_self: [...self].sort((a, b) => b[1] - a[1]).slice(0, 12).filter(([, n]) => n > 1).map(([f, n]) => `${round1((n * SAMPLE_US) / 1000)} ms ${f}`),
      top_total: [...total].filter(([f]) => !f.startsWith('(root)')).sort((a, b) => b[1] - a[1]).slice(0, 40).filter(([, n]) => n > 1).map(([f, n]) => `${round1((n * SAMPLE_US) / 1000)} ms ${f}`),
    };
    s.ws.close();
  }
  return out;
}

interface Measured {
  target: string;
  round: number;
  deliveries: number;
  wall_ms: number;
  /** Summed over workerd's threads from /proc/<pid>/task/<tid>/schedstat (ns resolution). */
  cpu_ms: number;
  /** The same from /proc/<pid>/stat's utime + stime (10 ms ticks): a check. */
  cpu_ms_ticks: number;
  idle_ms: number;
  polls: number;
  poll_ms: number;
  cpu_us_per_delivery: number;
  statuses: Record<string, number>;
  steal_pct: number;
  threads_ms: Record<string, number>;
}

async function measure(target: Target, roundNo: number, n: number, pollCost: number): Promise<Measured> {
  const batch = await signBatch(n);
  const rate = await idleRate(target.pid);
  const threads0 = threadCpuNs(target.pid);
  const host0 = cpuTimes();
  const ticks0 = processCpuMs(target.pid);
  const t0 = performance.now();
  const statuses = await send(target.url, batch, concurrency);
  const polls = target.dispatches ? await waitDispatched(target.db!) : 0;
  // What the last requests left under waitUntil (the drift check, a log line) ends too.
  await sleep(SETTLE_MS);
  const wall = performance.now() - t0;
  const ticks = processCpuMs(target.pid) - ticks0;
  const host1 = cpuTimes();
  const threads1 = threadCpuNs(target.pid);
  const threads: Record<string, number> = {};
  let cpu = 0;
  for (const [name, ns] of threads1) {
    const delta = (ns - (threads0.get(name) ?? 0)) / 1e6;
    cpu += delta;
    if (delta >= 1) threads[name] = round1(delta);
  }
  // A thread gone since the first reading took its time with it: fall back on the tick count.
  if ([...threads0.keys()].some((name) => !threads1.has(name))) cpu = ticks;
  const idle = (rate * wall) / 1000;
  const pollMs = polls * pollCost;
  return {
    target: target.name,
    round: roundNo,
    deliveries: n,
    wall_ms: round1(wall),
    cpu_ms: round1(cpu),
    cpu_ms_ticks: ticks,
    idle_ms: round1(idle),
    polls,
    poll_ms: round1(pollMs),
    cpu_us_per_delivery: round1(((cpu - idle - pollMs) / n) * 1000),
    statuses,
    steal_pct: round1(((host1.steal - host0.steal) / Math.max(1, host1.total - host0.total)) * 100),
    threads_ms: threads,
  };
}

async function main() {
  spawnSync('taskset', ['-p', '-c', '1', String(process.pid)], { stdio: 'ignore' });
  const work = mkdtempSync(join(tmpdir(), 'podhook-worker-cpu-'));
  const targets: Target[] = [];
  try {
    console.log('bundling (wrangler deploy --dry-run) ...');
    const podhookScript = bundle(join(work, 'podhook'));
    const beforeScript = against ? bundle(join(work, 'podhook-before'), undefined, checkout(against, join(work, 'before-tree'))) : undefined;
    const floorScript = bundle(join(work, 'floor'), 'bench/targets/worker-floor.ts');
    // The bundles beside the profiles: their line numbers are the bundles'.
    if (profilesDir) for (const [name, script] of [['podhook', podhookScript], ['podhook-before', beforeScript]] as const) if (script) copyFileSync(script, join(profilesDir, `${name}.js`));
    // wrangler.toml's compatibility date, flags, vars and D1 binding, as `wrangler dev` reads them.
    const { workerOptions } = unstable_getMiniflareWorkerOptions(join(ROOT, 'wrangler.toml'));
    const common = { compatibilityDate: workerOptions.compatibilityDate, compatibilityFlags: workerOptions.compatibilityFlags };
    const withD1 = (d1Dir: string, vars: Record<string, string> = {}) =>
      ({
        ...common,
        d1Databases: workerOptions.d1Databases,
        bindings: { ...(workerOptions.bindings as Record<string, unknown>), SVC_WEBHOOK_SECRET: SECRET, ...vars },
        d1Persist: join(work, d1Dir),
      }) as WorkerOptions;
    // Every target in its own workerd (and D1): podhook, podhook at --against, the floor, ingest only.
    const plan: Array<[Target['name'], string, (d1Dir: string) => WorkerOptions]> = [
      ['podhook', podhookScript, (d) => withD1(d)],
      ...(beforeScript ? [['podhook-before', beforeScript, (d: string) => withD1(`${d}-before`)] as [Target['name'], string, (d1Dir: string) => WorkerOptions]] : []),
      ['floor', floorScript, () => common as WorkerOptions],
      ...(ingestOnly ? [['podhook-ingest-only', podhookScript, (d: string) => withD1(`${d}-ingest`, { DISPATCHER: 'off' })] as [Target['name'], string, (d1Dir: string) => WorkerOptions]] : []),
    ];
    const start = async (d1Dir: string, inspectorPort?: number) => {
      const started: Target[] = [];
      for (const [i, [name, script, options]] of plan.entries()) {
        const t = await startTarget(name, script, options(d1Dir), inspectorPort && inspectorPort + i);
        targets.push(t);
        started.push(t);
        if (t.db) await applyMigrations(t.db);
      }
      // Warm up each (JIT, D1's statement caches), unmeasured.
      for (const t of started) {
        const statuses = await send(t.url, await signBatch(warmUp), concurrency);
        if (t.dispatches) await waitDispatched(t.db!);
        if (statuses['200'] !== warmUp) throw new Error(`${t.name} warm-up: ${JSON.stringify(statuses)}`);
      }
      return started;
    };
    const all = await start('d1');
    const podhook = all[0]!;
    console.log(`workerd pids: ${all.map((t) => `${t.name} ${t.pid}`).join(', ')}; ${basename(podhookScript)} ${Math.round(readFileSync(podhookScript).length / 1024)} KiB`);

    const pollCost = await pollCostMs(podhook);
    console.log(`one D1 poll costs workerd ${round3(pollCost)} ms (subtracted per poll)`);

    const results: Measured[] = [];
    for (let r = 1; r <= rounds; r++) {
      // Alternate the order from round to round (with more than two, rotate it).
      const shift = (r - 1) % all.length;
      const order = all.length === 2 ? (r % 2 ? all : [...all].reverse()) : [...all.slice(shift), ...all.slice(0, shift)];
      for (const t of order) {
        const m = await measure(t, r, deliveries, pollCost);
        results.push(m);
        console.log(
          `round ${r} ${t.name.padEnd(19)} ${String(m.cpu_us_per_delivery).padStart(7)} µs/delivery  (cpu ${m.cpu_ms} ms, idle ${m.idle_ms}, polls ${m.polls}=${m.poll_ms} ms, wall ${m.wall_ms} ms, steal ${m.steal_pct}%, ${JSON.stringify(m.statuses)})`,
        );
        console.log(`         threads (ms): ${JSON.stringify(m.threads_ms)}`);
        if (m.statuses['200'] !== deliveries) throw new Error(`${t.name}: not every delivery got a 200: ${JSON.stringify(m.statuses)}`);
      }
    }

    // Every delivery dispatched: its row processed.
    const rows: Record<string, Record<string, number>> = {};
    for (const t of all.filter((x) => x.db)) {
      const counts = await t.db!.prepare('SELECT status, count(*) AS n FROM deliveries GROUP BY status').all<{ status: string; n: number }>();
      rows[t.name] = Object.fromEntries(counts.results.map((c) => [c.status, c.n]));
    }

    // Where each target's CPU goes, by isolate: one more round of each, on fresh workerd processes
    // with their inspector on (profiling slows them; only the shares are read from it).
    let isolates: Record<string, { process_cpu_us_per_delivery_profiled: number; sampled_us_per_delivery: Record<string, number>; [k: string]: unknown }> | undefined;
    const isolateRounds: Record<string, number[]> = {};
    if (split) {
      for (const t of targets.splice(0)) await t.mf.dispose();
      const port = await freePort();
      const profiled = await start('d1-split', port);
      isolates = {};
      // --split-rounds=N: N profiled rounds, the order rotating; each target's isolate figure is their median.
      const order = [...profiled.entries()];
      for (let r = 1; r <= splitRounds; r++) for (const [i, t] of [...order.slice((r - 1) % order.length), ...order.slice(0, (r - 1) % order.length)]) {
        let m: Measured | undefined;
        const times = await profileIsolates(port + i, async () => {
          m = await measure(t, -r, deliveries, pollCost);
        }, `${t.name}-${r}`);
        const perDelivery: Record<string, number> = {};
        for (const [id, x] of Object.entries(times)) {
          const us = round1(((x.js_ms + x.gc_ms + x.program_ms) / deliveries) * 1000);
          if (us >= 1) perDelivery[id] = us;
        }
        const inIsolates = Object.values(perDelivery).reduce((a, b) => a + b, 0);
        // The profiler's own threads (one per profiled isolate) are the measurement's, not workerd's.
        const profilerMs = Object.entries(m!.threads_ms)
          .filter(([thread]) => thread.startsWith('v8:ProfEvntProc'))
          .reduce((sum, [, ms]) => sum + ms, 0);
        perDelivery['(the profiler threads)'] = round1((profilerMs / deliveries) * 1000);
        perDelivery['(outside any isolate: workerd native code, V8 background threads)'] = round1(m!.cpu_us_per_delivery - inIsolates - perDelivery['(the profiler threads)']!);
        for (const id of Object.keys(times)) if (!times[id]!.top_self?.length) delete times[id];
        (isolateRounds[t.name] ??= []).push(perDelivery[`core:user:${t.name}`]!);
        // The first profiled round's detail is kept (its profiles, threads).
        isolates[t.name] ??= { process_cpu_us_per_delivery_profiled: m!.cpu_us_per_delivery, sampled_us_per_delivery: perDelivery, profiles: times, threads_ms: m!.threads_ms };
        console.log(`by isolate, ${t.name} (profiled round ${r}, process ${m!.cpu_us_per_delivery} µs/delivery), µs/delivery: ${JSON.stringify(perDelivery)}`);
      }
    }

    const per = (name: string) => results.filter((m) => m.target === name).map((m) => m.cpu_us_per_delivery);
    /** Per round, one target's figure over another's (both measured in that round). */
    const ratiosOf = (a: string, b: string) =>
      Array.from({ length: rounds }, (_, i) => {
        const x = results.find((m) => m.target === a && m.round === i + 1)!;
        const y = results.find((m) => m.target === b && m.round === i + 1)!;
        return x.cpu_us_per_delivery / y.cpu_us_per_delivery;
      });
    const summary = (xs: number[], digits = round1) => ({ median: digits(median(xs)), min: digits(Math.min(...xs)), max: digits(Math.max(...xs)) });
    const names = all.map((t) => t.name);
    const floorMedian = median(per('floor'));
    /** The Worker's own isolate (what Cloudflare bills, roughly): the median of the profiled rounds. */
    const isolateUs = (name: string) => round1(median(isolateRounds[name]!));
    /** Per profiled round, one target's isolate over another's (both profiled in that round). */
    const isolateRatios = (a: string, b: string) => isolateRounds[a]!.map((x, i) => x / isolateRounds[b]![i]!);
    const isolate = isolates
      ? Object.fromEntries(
          names.map((name) => [
            name,
            {
              us_per_delivery: isolateUs(name),
              rounds: isolateRounds[name],
              // The issue's ratio: the Worker's isolate over the floor's whole process (median of the rounds).
              to_floor_process: round3(isolateUs(name) / floorMedian),
              to_floor_isolate: summary(isolateRatios(name, 'floor'), round3),
              ...(against && name === 'podhook' ? { to_before_isolate: summary(isolateRatios('podhook', 'podhook-before'), round3) } : {}),
            },
          ]),
        )
      : undefined;
    const report = {
      date: new Date().toISOString(),
      command: `node --import tsx bench/worker-cpu.ts --deliveries=${deliveries} --concurrency=${concurrency} --rounds=${rounds}${split ? ` --split-rounds=${splitRounds}` : ''}${against ? ` --against=${against}` : ''}`,
      ...(against ? { against: spawnSync('git', ['rev-parse', against], { cwd: ROOT, encoding: 'utf8' }).stdout.trim() } : {}),
      head: spawnSync('git', ['rev-parse', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).stdout.trim(),
      deliveries,
      concurrency,
      rounds,
      body_bytes: bodyBytes,
      event_type: EVENT_TYPE,
      warm_up: warmUp,
      workerd: spawnSync(join(ROOT, 'node_modules/.bin/workerd'), ['--version'], { encoding: 'utf8' }).stdout.trim(),
      compatibility_date: workerOptions.compatibilityDate,
      node: process.version,
      cpu_model: readFileSync('/proc/cpuinfo', 'utf8').match(/model name\s*:\s*(.*)/)?.[1],
      poll_cost_ms: round3(pollCost),
      cpu_us_per_delivery: Object.fromEntries(names.map((name) => [name, summary(per(name))])),
      ratio_podhook_to_floor: summary(ratiosOf('podhook', 'floor'), round3),
      ...(against
        ? { ratio_podhook_before_to_floor: summary(ratiosOf('podhook-before', 'floor'), round3), ratio_podhook_to_before: summary(ratiosOf('podhook', 'podhook-before'), round3) }
        : {}),
      isolate,
      included:
        'the whole workerd process: request parsing, the Worker, its waitUntil dispatch and handlers, console log output, and local D1 (SQLite in a Durable Object in the same process and thread)',
      podhook_rows: rows,
      isolates,
      rounds_detail: results,
    };
    const line = (label: string, x: { median: number; min: number; max: number }, unit: string) => `  ${label.padEnd(22)} ${x.median}${unit} (${x.min}-${x.max})\n`;
    console.log(
      `\nworkerd CPU per delivery, whole process (median, range over ${rounds} rounds of ${deliveries}, ${concurrency} in flight):\n` +
        names.map((name) => line(name, report.cpu_us_per_delivery[name]!, ' µs')).join('') +
        line('podhook / floor', report.ratio_podhook_to_floor, 'x') +
        (against ? line('before / floor', report.ratio_podhook_before_to_floor!, 'x') + line('podhook / before', report.ratio_podhook_to_before!, 'x') : '') +
        (isolate
          ? `the Worker's own isolate (profiled round), µs per delivery; over the floor's process median, over the floor's isolate:\n` +
            names.map((name) => `  ${name.padEnd(22)} ${isolate[name]!.us_per_delivery} µs  ${isolate[name]!.to_floor_process}x  ${isolate[name]!.to_floor_isolate.median}x${isolate[name]!.to_before_isolate ? `  (over before: ${isolate[name]!.to_before_isolate.median}x, ${isolate[name]!.to_before_isolate.min}-${isolate[name]!.to_before_isolate.max})` : ''}\n`).join('')
          : '') +
        `  rows: ${JSON.stringify(rows)}`,
    );
    if (save) {
      const file = outFile ?? join(ROOT, `bench/results/worker-cpu-${report.date.slice(0, 10)}.json`);
      writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
      console.log(`wrote ${file}`);
    }
  } finally {
    for (const t of targets) await t.mf.dispose();
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
