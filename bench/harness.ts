/** Shared pieces of the benchmark: pinned target processes, the load client, /proc readings. */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { freePort } from '../test/helpers/free-port.js';
import { cpuStatTicks, processTree, type LoadOptions, type LoadResult } from './load-client.js';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const SECRET = 'bench-secret-0123456789';

export interface TargetSpec {
  name: string;
  args: string[];
  env?: Record<string, string>;
  /** Processes of this target sharing one database (`DATABASE_URL`): podhook replicas. Default 1. */
  replicas?: number;
  /**
   * The cores its processes may run on (`taskset -c`), default `0` (the load client has core 1).
   * Replicas sharing the machine with their database server and the client may get `0,1`.
   */
  cores?: string;
  /** Wait until this path answers 200 before measuring (podhook's `/readyz`: its database reached). */
  readyPath?: string;
  /** Its database is on the bench's PostgreSQL server (bench/postgres.ts), not a SQLite file. */
  postgres?: boolean;
  /** With `postgres`: the cores the database server may use while this target is measured (pinTree). */
  storeCores?: string;
  /** Spread its deliveries over this many pods (the load client's `pods`): an ordered handler's keys. */
  pods?: number;
  /** Exports OpenTelemetry traces to the bench's OTLP sink (bench/targets/otlp-sink.ts), at a path of its own (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT). */
  otlpSink?: boolean;
}

export interface Running {
  spec: TargetSpec;
  /** The first replica's process (the only one, but for replicated targets). */
  child: ChildProcess;
  url: string;
  port: number;
  /** Every replica: its process, URL and port (one entry unless `spec.replicas` > 1). */
  replicas: Array<{ child: ChildProcess; url: string; port: number }>;
  /** Resolves with the first output line matching `pattern`, seen so far or later. */
  waitForLine(pattern: RegExp, timeoutMs: number): Promise<string>;
  /** Everything the target has written so far (stdout and stderr). */
  output(): string;
}

/**
 * podhook as `npm start` runs it: the node options and script of package.json's `start` command
 * (after its build), read from there so the bench cannot drift from what is shipped. `extra`
 * node options go before the script.
 */
export function podhookArgs(...extra: string[]): string[] {
  const start = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { scripts: { start: string } }).scripts.start;
  // `exec` makes the shell become node, so signals sent to `npm start` reach the server.
  const words = start.split('&&').at(-1)!.trim().replace(/^exec\s+/, '').split(/\s+/);
  if (words[0] !== 'node') throw new Error(`package.json's start command does not end in a node command: ${start}`);
  const args = words.slice(1);
  const script = args.findIndex((w) => !w.startsWith('-'));
  return [...args.slice(0, script), ...extra, ...args.slice(script)];
}

export const twoCores = cpus().length >= 2 && spawnSync('taskset', ['--version']).status === 0;
const pin = (cores: number | string, cmd: string, args: string[]): [string, string[]] =>
  twoCores ? ['taskset', ['-c', String(cores), cmd, ...args]] : [cmd, args];

/**
 * Starts a target on core 0 (or `spec.cores`) with its own database file on a free port and
 * waits until it answers HTTP; a replicated target starts each replica so, every one with its
 * own log file and the same environment. The port can still be taken between the check and the
 * target's own listen: a target that exits with EADDRINUSE is started again on another port.
 */
export async function startTarget(spec: TargetSpec, databasePath: string): Promise<Running> {
  const replicas: Running[] = [];
  try {
    for (let i = 0; i < (spec.replicas ?? 1); i++) {
      const path = i === 0 ? databasePath : `${databasePath}.replica-${i + 1}`;
      for (let attempt = 1; ; attempt++) {
        try {
          replicas.push(await startOn(spec, await freePort(), path));
          break;
        } catch (error) {
          if (!(error instanceof PortTakenError) || attempt === 3) throw error;
        }
      }
    }
  } catch (error) {
    for (const r of replicas) r.child.kill('SIGKILL');
    throw error;
  }
  return { ...replicas[0]!, replicas: replicas.map(({ child, url, port }) => ({ child, url, port })) };
}

class PortTakenError extends Error {}

async function startOn(spec: TargetSpec, port: number, databasePath: string): Promise<Running> {
  const [cmd, args] = pin(spec.cores ?? 0, process.execPath, spec.args);
  // The server's output goes to a file, never a pipe: the bench blocks in spawnSync while the
  // load client runs, and an undrained pipe would make a logging server buffer and stall.
  const logPath = `${databasePath}.log`;
  const logFd = openSync(logPath, 'w');
  const child = spawn(cmd, args, {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      PORT: String(port),
      HOST: '127.0.0.1',
      DATABASE_PATH: databasePath,
      SVC_WEBHOOK_SECRET: SECRET,
      ...spec.env,
    },
    stdio: ['ignore', logFd, logFd],
  });
  closeSync(logFd);
  const head = () => readFileSync(logPath, 'utf8').slice(0, 10_000);
  let exited: number | null | undefined;
  child.once('exit', (code) => (exited = code));
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (exited !== undefined) {
      const output = head();
      throw new (output.includes('EADDRINUSE') ? PortTakenError : Error)(`${spec.name} exited ${exited}: ${output}`);
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`${spec.name} did not start: ${head()}`);
    }
    // Any HTTP answer means it listens (the comparison targets have no /healthz); `readyPath` must answer 200.
    const answer = await probe(`http://127.0.0.1:${port}${spec.readyPath ?? '/'}`).then((r) => r.status, () => 0);
    if (answer !== 0 && (spec.readyPath === undefined || answer === 200)) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const url = `http://127.0.0.1:${port}/webhooks`;
  return {
    spec,
    child,
    port,
    url,
    replicas: [{ child, url, port }],
    output: () => readFileSync(logPath, 'utf8'),
    async waitForLine(pattern, timeoutMs) {
      const end = Date.now() + timeoutMs;
      for (;;) {
        const found = readFileSync(logPath, 'utf8').split('\n').find((l) => pattern.test(l));
        if (found) return found;
        if (Date.now() > end) throw new Error(`${spec.name}: no line matching ${pattern}`);
        await new Promise((r) => setTimeout(r, 250));
      }
    },
  };
}

/**
 * A one-off request on its own connection: a pooled keep-alive socket left from an earlier
 * probe may have been closed by the server's keep-alive timeout in the meantime.
 */
const probe = (url: string) => fetch(url, { headers: { connection: 'close' } });

/**
 * The OTLP/HTTP sink a tracing target exports to (bench/targets/otlp-sink.ts), on core 1 beside
 * the load client: it discards what it gets and counts it per target (`stats(name)`, for a
 * target exporting to `endpoint(name)`).
 */
export async function startOtlpSink(): Promise<{
  endpoint(target: string): string;
  child: ChildProcess;
  stats(target: string): Promise<{ requests: number; bytes: number; ingest_spans: number }>;
}> {
  const port = await freePort();
  const [cmd, args] = pin(1, process.execPath, ['--import', 'tsx', 'bench/targets/otlp-sink.ts']);
  const child = spawn(cmd, args, { cwd: ROOT, env: { PATH: process.env.PATH, PORT: String(port) }, stdio: 'ignore' });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  while ((await probe(url).then((r) => r.status, () => 0)) !== 200) {
    if (Date.now() > deadline || child.exitCode !== null) throw new Error('the OTLP sink did not start');
    await new Promise((r) => setTimeout(r, 100));
  }
  const none = { requests: 0, bytes: 0, ingest_spans: 0 };
  return {
    endpoint: (target) => `${url}/${target}/v1/traces`,
    child,
    stats: async (target) => ((await (await probe(url)).json()) as Record<string, typeof none>)[target] ?? none,
  };
}

/** Runs the load client on core 1 as its own process (so it never shares the server's core). */
export function load(options: LoadOptions): LoadResult {
  const [cmd, args] = pin(1, process.execPath, ['--import', 'tsx', 'bench/load-client.ts', JSON.stringify(options)]);
  const result = spawnSync(cmd, args, { cwd: ROOT, encoding: 'utf8', timeout: options.durationMs + 60_000 });
  if (result.status !== 0) throw new Error(`load client failed: ${result.stderr}`);
  return JSON.parse(result.stdout) as LoadResult;
}

/** `load` as a promise, the client running meanwhile: several clients at once, or signals sent to a target while it runs. */
export function loadAsync(options: LoadOptions): Promise<LoadResult> {
  const [cmd, args] = pin(1, process.execPath, ['--import', 'tsx', 'bench/load-client.ts', JSON.stringify(options)]);
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d));
    child.stderr.on('data', (d: Buffer) => (stderr += d));
    child.once('exit', (code) => (code === 0 ? resolve(JSON.parse(stdout) as LoadResult) : reject(new Error(`load client failed: ${stderr}`))));
  });
}

/**
 * Pins a process and every process under it to `cores` (`taskset -a -p`); processes forked later
 * (PostgreSQL's new backends) inherit the postmaster's. A no-op without two cores and taskset.
 */
export function pinTree(root: number, cores: string): void {
  if (!twoCores) return;
  const pids = processTree(root).map((p) => p.pid);
  const result = spawnSync('sh', ['-c', 'for p in "$@"; do taskset -a -p -c "$0" "$p" >/dev/null 2>&1; done', cores, ...pids.map(String)]);
  if (result.status !== 0) throw new Error(`could not pin ${root}'s processes to ${cores}`);
}

/** Load options aimed at every replica of a target (connections spread over them). */
export const aimAt = (r: Running) => ({ url: r.url, urls: r.replicas.map((x) => x.url), secret: SECRET, pods: r.spec.pods });

/**
 * A full-load burst against a running target, with the servers' CPU (and the database server's,
 * given `storePid`) read by the client over the measured phase only: CPU per request (µs), the
 * database server's included, beside the client's result.
 */
export function burst(
  r: Running,
  options: Omit<LoadOptions, 'url' | 'urls' | 'secret' | 'serverPids'>,
): LoadResult & { cpuUsPerRequest: number } {
  const result = load({ ...aimAt(r), serverPids: r.replicas.map((x) => x.child.pid!), ...options });
  const cpuMs = (result.serverCpuMs ?? 0) + (result.storeCpuMs ?? 0);
  return { ...result, cpuUsPerRequest: Math.round((cpuMs * 1000) / Math.max(1, result.sent)) };
}

/** Peak resident memory of a process (VmHWM), in MB. */
export const peakRssMb = (pid: number) => statusMb(pid, 'VmHWM');

/** Resident memory of a process now (VmRSS), in MB. */
export const rssMb = (pid: number) => statusMb(pid, 'VmRSS');

function statusMb(pid: number, field: 'VmHWM' | 'VmRSS'): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
  return Math.round(kb / 102.4) / 10;
}

/** The first line of /proc/stat: cumulative CPU times of the whole host. */
export const cpuTimes = (): number[] => cpuStatTicks()[0]!;

/** CPU steal as a share of all CPU time between two /proc/stat readings. */
export function stealPercent(before: number[], after: number[]): number {
  const delta = after.map((v, i) => v - before[i]!);
  const total = delta.reduce((a, b) => a + b, 0);
  return total === 0 ? 0 : Math.round((delta[7]! / total) * 1000) / 10;
}

export const round = (n: number) => Math.round(n * 100) / 100;
export const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? 0 : s.length % 2 ? s[s.length >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/** Handler lag (receipt → handler start) from podhook's /metrics histogram: count, mean, p99 bucket. */
export async function handlerLag(port: number): Promise<{ count: number; mean_ms: number; p99_le_ms: number | null }> {
  const text = await (await probe(`http://127.0.0.1:${port}/metrics`)).text();
  const buckets = [...text.matchAll(/^podhook_dispatch_lag_seconds_bucket\{le="([^"]+)"\} (\d+)/gm)].map((m) => [m[1]!, Number(m[2])] as const);
  const count = Number(/^podhook_dispatch_lag_seconds_count (\d+)/m.exec(text)?.[1] ?? 0);
  const sum = Number(/^podhook_dispatch_lag_seconds_sum ([\d.e+-]+)/m.exec(text)?.[1] ?? 0);
  const p99 = buckets.find(([, c]) => c >= count * 0.99)?.[0];
  return {
    count,
    mean_ms: count ? round((sum / count) * 1000) : 0,
    p99_le_ms: p99 === undefined || p99 === '+Inf' ? null : round(Number(p99) * 1000),
  };
}
