/**
 * The load client of the benchmark: unique, correctly signed deliveries of realistic size with a
 * fresh `t`, sent over keep-alive connections to 127.0.0.1 only, bounded in count and time.
 *
 * A raw HTTP/1.1 client over `net` with precomputed requests: before the measured phase it signs
 * a pool of deliveries (head and body as one buffer each, a fresh event id, `t` and signature
 * written into a template), then sending one is a single socket write. An HTTP library's own
 * per-request cost made the client, not the server, the bottleneck of the fastest target. One
 * request in flight per connection (no pipelining). A run longer than the pool repeats its
 * deliveries (counted in `repeated`; a receiver answers those as duplicates).
 *
 * Two modes: `concurrency` (closed loop, maximum throughput) and `rate` (open loop at a fixed
 * request rate; latency is measured from the scheduled send time, so a stall is not hidden, and
 * the client naps between sends rather than spinning, leaving its core to others).
 * Given `urls`, connections are spread over several servers in turn (replicas behind no
 * balancer). Given `serverPids` (and `storePid`, a database server's root process), it also
 * reads their CPU time over the measured phase only, and the whole host's.
 *
 * Run as a process: `node --import tsx bench/load-client.ts '<json options>'` prints a JSON result.
 */
import { createHmac, randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';

export interface LoadOptions {
  url: string;
  /** Several servers (replicas): connection i goes to `urls[i % urls.length]`; `url` is then ignored. */
  urls?: string[];
  secret: string;
  durationMs: number;
  /** Closed loop: this many requests in flight. */
  concurrency?: number;
  /** Open loop: this many requests per second (connections = `concurrency`, default 64). */
  rate?: number;
  bodyBytes?: number;
  /** Hard bound on requests sent. */
  maxRequests?: number;
  /** Unmeasured closed-loop load before the measured phase (at least 4 requests a connection). */
  warmUpMs?: number;
  eventType?: string;
  /** The server's process ids (one per replica): their CPU time over the measured phase is reported. */
  serverPids?: number[];
  /**
   * A database server's root process (PostgreSQL's postmaster): the CPU time of it and every
   * process under it (backends, exited ones included) is reported as `storeCpuMs`.
   */
  storePid?: number;
  /**
   * Deliveries signed before the measured phase, sent in turn, then again from the first.
   * Default: what the rate needs, or 20 per ms of a closed-loop run (at most 40,000).
   */
  poolSize?: number;
  /** Spread the deliveries over this many pods (`data.pod.id` cycles through as many ids); default one pod per template. */
  pods?: number;
}

export interface LoadResult {
  sent: number;
  ok: number;
  statuses: Record<string, number>;
  errors: number;
  elapsedMs: number;
  rps: number;
  latencyMs: { p50: number; p90: number; p99: number; max: number };
  /** With `serverPids`: the servers' CPU time (user + system, summed) during the measured phase. */
  serverCpuMs?: number;
  /** With `serverPids`: that CPU time as a share of one core over the phase (1 = a full core; two busy replicas near 2). */
  serverCpuShare?: number;
  /**
   * With `serverPids`: the servers' main threads on a CPU, and waiting in a run queue for one
   * (another process had it), as shares of the phase (averaged over the servers). Their sum
   * near 1: the server, not the client, set the pace, even on a host where other work takes CPU.
   */
  serverMainThread?: { onCpu: number; waitingForCpu: number };
  /** With `storePid`: the database server's CPU time (its whole process tree) during the phase. */
  storeCpuMs?: number;
  /** The whole host's busy CPU time as a share of all its cores over the phase (1 = every core busy). */
  hostBusyShare: number;
  /** Each core's busy share over the phase (core 0 first). */
  coreBusyShare: number[];
  /** The client's own CPU time over the phase as a share of one core (near 1: the client limits). */
  clientCpuShare: number;
  /** The client's main thread waiting for a CPU, as a share of the phase. */
  clientWaitingForCpu: number;
  /** Requests that repeated an earlier delivery of the pool (0 unless the pool ran out). */
  repeated: number;
}

/** A plausible pod event padded to `size` bytes of JSON. */
export function eventBody(size: number, eventId: string, podId: string = randomUUID()): Buffer {
  const base = {
    id: eventId,
    type: 'pod.status.changed',
    created_at: new Date().toISOString(),
    data: {
      pod: { id: podId, name: 'agent-pod', slug: 'agent-pod', status: 'provisioning', tier: 'starter', model: 'managed' },
      previous_status: 'provisioning',
      pad: '',
    },
  };
  const without = Buffer.byteLength(JSON.stringify(base));
  base.data.pad = 'x'.repeat(Math.max(0, size - without));
  return Buffer.from(JSON.stringify(base));
}

/** The fields of /proc/<pid>/stat after the command name (field 3, the state, is index 0). */
const statFields = (pid: number | string) => readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');

/** CPU time (user + system) of a process, in ms (from /proc/<pid>/stat, 100 Hz ticks). */
export function processCpuMs(pid: number): number {
  const fields = statFields(pid);
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** A process and every process under it, from /proc: each one's pid and the fields of its stat file. */
export function processTree(root: number): Array<{ pid: number; stat: string[] }> {
  const children = new Map<number, number[]>();
  const stats = new Map<number, string[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let f: string[];
    try {
      f = statFields(entry);
    } catch {
      continue; // exited while listing
    }
    const pid = Number(entry);
    children.set(Number(f[1]), [...(children.get(Number(f[1])) ?? []), pid]);
    stats.set(pid, f);
  }
  const tree: Array<{ pid: number; stat: string[] }> = [];
  const stack = [root];
  while (stack.length > 0) {
    const pid = stack.pop()!;
    const stat = stats.get(pid);
    if (stat) tree.push({ pid, stat });
    stack.push(...(children.get(pid) ?? []));
  }
  return tree;
}

/**
 * CPU time of a process and every process under it, in ms: each live one's own time plus the
 * time of its children that exited and were waited for (cutime, cstime), so a PostgreSQL backend
 * that ends during the phase is still counted, through the postmaster.
 */
export function treeCpuMs(root: number): number {
  const ticks = processTree(root).reduce((sum, { stat: f }) => sum + Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]), 0);
  return ticks * 10;
}

/** /proc/stat's CPU lines as tick counts: the whole host first, then each core. */
export function cpuStatTicks(): number[][] {
  return readFileSync('/proc/stat', 'utf8')
    .split('\n')
    .filter((line) => /^cpu\d* /.test(line))
    .map((line) => line.trim().split(/\s+/).slice(1).map(Number));
}

/** Busy and total CPU time (ticks) of the whole host (index 0), then of each core. */
function hostTicks(): Array<{ busy: number; total: number }> {
  return cpuStatTicks().map((t) => {
    const total = t.reduce((a, b) => a + b, 0);
    return { busy: total - t[3]! - t[4]!, total }; // idle and iowait are not busy
  });
}

/** The main thread's time on a CPU and waiting for one, in ms (/proc/<pid>/schedstat, ns). */
export function mainThreadSchedMs(pid: number): { onCpu: number; waiting: number } {
  const [onCpu, waiting] = readFileSync(`/proc/${pid}/schedstat`, 'utf8').trim().split(' ').map(Number);
  return { onCpu: onCpu! / 1e6, waiting: waiting! / 1e6 };
}

/** Open loop: the longest the client sleeps between looking at its sockets and schedule (ms). */
const NAP_MS = 0.2;

const ID_MARK = '00000000-0000-4000-8000-000000000000';
const T_MARK = '0000000000';
const SIG_MARK = '0'.repeat(64);
const POD_MARK = 'pppppppp-pppp-pppp-pppp-pppppppppppp';

/**
 * One request as bytes, with the places of its event id (header and body), `t` and `v1`, so a
 * new delivery is a few writes into the same buffer.
 */
function requestTemplate(target: URL, bodyBytes: number, eventType: string) {
  const body = eventBody(bodyBytes, ID_MARK, POD_MARK);
  const head =
    `POST ${target.pathname}${target.search} HTTP/1.1\r\n` +
    `host: ${target.host}\r\n` +
    'content-type: application/json\r\n' +
    `content-length: ${body.byteLength}\r\n` +
    `x-svc-signature: t=${T_MARK},v1=${SIG_MARK}\r\n` +
    `x-svc-event-type: ${eventType}\r\n` +
    `x-svc-event-id: ${ID_MARK}\r\n` +
    '\r\n';
  const bytes = Buffer.concat([Buffer.from(head, 'latin1'), body]);
  const bodyStart = Buffer.byteLength(head);
  return {
    bytes,
    bodyStart,
    headerId: head.indexOf(`x-svc-event-id: ${ID_MARK}`) + 'x-svc-event-id: '.length,
    bodyId: bodyStart + body.indexOf(ID_MARK),
    podId: bodyStart + body.indexOf(POD_MARK),
    podIdDefault: randomUUID(),
    t: head.indexOf(`t=${T_MARK}`) + 2,
    sig: head.indexOf(`v1=${SIG_MARK}`) + 3,
  };
}

/** Reads HTTP/1.1 responses off a byte stream: status, then the body by length or chunked. */
class ResponseReader {
  private buffered: Buffer | undefined;

  /** Feeds bytes; returns the statuses of the responses they completed. */
  push(chunk: Buffer): number[] {
    let data = this.buffered ? Buffer.concat([this.buffered, chunk]) : chunk;
    const done: number[] = [];
    for (;;) {
      const headEnd = data.indexOf('\r\n\r\n');
      if (headEnd < 0) break;
      const head = data.toString('latin1', 0, headEnd);
      const status = Number(head.slice(9, 12));
      const length = /\r\ncontent-length: *(\d+)/i.exec(head);
      let end: number;
      if (length) {
        end = headEnd + 4 + Number(length[1]);
        if (data.byteLength < end) break;
      } else if (/\r\ntransfer-encoding: *chunked/i.test(head)) {
        const last = data.indexOf('\r\n0\r\n\r\n', headEnd + 2);
        if (last < 0) break;
        end = last + 7;
      } else {
        end = headEnd + 4;
      }
      done.push(status);
      data = data.subarray(end);
    }
    this.buffered = data.byteLength > 0 ? data : undefined;
    return done;
  }
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const { secret, durationMs, rate, bodyBytes = 1024, maxRequests = 2_000_000, eventType = 'pod.status.changed', serverPids = [], storePid } = options;
  // One pod id per template by default (as before); with `pods`, each delivery takes the next of that many.
  const podIds = Array.from({ length: options.pods ?? 0 }, () => randomUUID());
  let nextPod = 0;
  const poolSize = options.poolSize ?? (rate ? Math.ceil((rate * durationMs) / 1000) + 1 : Math.min(40_000, Math.max(1000, durationMs * 20)));
  const targets = (options.urls ?? [options.url]).map((u) => new URL(u));
  for (const target of targets) {
    if (!['127.0.0.1', 'localhost', '[::1]'].includes(target.hostname)) throw new Error('load client: loopback only');
  }
  const connectionCount = options.concurrency ?? 64;
  // One template per server (their host headers differ); every request has the same size, as the pool needs.
  const templates = targets.map((target) => requestTemplate(target, bodyBytes, eventType));
  if (new Set(templates.map((t) => t.bytes.byteLength)).size > 1) throw new Error('load client: the servers\' requests differ in size');
  const latencies = new Float64Array(maxRequests);
  const statuses: Record<string, number> = {};
  let measuring = false;
  let sent = 0;
  let done = 0;
  let errors = 0;
  let t = 0;
  let tPrefix = '';
  let tSecond = -1;

  /** Writes a fresh delivery (new id, current `t`, its signature) into a buffer laid out as `template`. */
  const fill = (bytes: Buffer, template: (typeof templates)[number]) => {
    const second = Math.floor(Date.now() / 1000);
    if (second !== tSecond) {
      tSecond = second;
      t = second;
      tPrefix = `${t}.`;
    }
    const id = randomUUID();
    bytes.write(id, template.headerId, 'latin1');
    bytes.write(id, template.bodyId, 'latin1');
    bytes.write(podIds.length > 0 ? podIds[nextPod++ % podIds.length]! : template.podIdDefault, template.podId, 'latin1');
    bytes.write(String(t), template.t, 'latin1');
    const v1 = createHmac('sha256', secret).update(tPrefix).update(bytes.subarray(template.bodyStart)).digest('hex');
    bytes.write(v1, template.sig, 'latin1');
  };

  interface Connection {
    socket: Socket;
    /** Which server (index into `targets`, `templates` and the pools). */
    server: number;
    bytes: Buffer;
    reader: ResponseReader;
    /** When the request in flight was due (latency origin), or undefined when idle. */
    since: number | undefined;
    onIdle: () => void;
  }

  const open = (_: unknown, i: number): Promise<Connection> =>
    new Promise((resolve, reject) => {
      const server = i % targets.length;
      const target = targets[server]!;
      const socket = connect({ host: target.hostname.replace(/^\[|\]$/g, ''), port: Number(target.port || 80), noDelay: true });
      const conn: Connection = { socket, server, bytes: Buffer.from(templates[server]!.bytes), reader: new ResponseReader(), since: undefined, onIdle: () => {} };
      socket.once('connect', () => resolve(conn));
      socket.once('error', reject);
      socket.on('data', (chunk) => {
        for (const status of conn.reader.push(chunk)) {
          if (measuring) {
            statuses[status] = (statuses[status] ?? 0) + 1;
            if (done < maxRequests) latencies[done++] = performance.now() - conn.since!;
          }
          conn.since = undefined;
          conn.onIdle();
        }
      });
      socket.on('close', () => {
        if (conn.since !== undefined) {
          if (measuring) errors++;
          conn.since = undefined;
        }
        conn.onIdle = () => {};
      });
    });
  /** Warm-up: signed on the fly into the connection's own buffer. */
  const send = (conn: Connection, due: number) => {
    fill(conn.bytes, templates[conn.server]!);
    conn.since = due;
    conn.socket.write(conn.bytes);
  };
  const size = templates[0]!.bytes.byteLength;
  // One pool per server, each with its share of the deliveries.
  const poolCount = Math.max(1, Math.ceil(Math.min(poolSize, maxRequests) / targets.length));
  const pools = targets.map(() => ({ bytes: Buffer.allocUnsafe(poolCount * size), next: 0 }));
  let repeated = 0;
  /** Measured phase: the next pre-signed delivery of the connection's server's pool. */
  const sendPooled = (conn: Connection, due: number) => {
    const pool = pools[conn.server]!;
    const at = (pool.next % poolCount) * size;
    if (pool.next++ >= poolCount) repeated++;
    conn.since = due;
    conn.socket.write(pool.bytes.subarray(at, at + size));
  };

  const connections = await Promise.all(Array.from({ length: connectionCount }, open));

  // Warm up unmeasured, so the server's JIT and pools are warm.
  // Open loop: only the few requests a connection, so no burst precedes a fixed-rate phase.
  const warmUpEnd = performance.now() + (options.warmUpMs ?? (rate ? 0 : 300));
  await Promise.all(
    connections.map(
      (conn) =>
        new Promise<void>((resolve) => {
          let sentHere = 1;
          conn.onIdle = () => {
            if (!conn.socket.destroyed && (sentHere < 4 || performance.now() < warmUpEnd)) {
              sentHere++;
              send(conn, performance.now());
            } else resolve();
          };
          send(conn, performance.now());
        }),
    ),
  );

  pools.forEach((pool, server) => {
    for (let i = 0; i < poolCount; i++) {
      const slot = pool.bytes.subarray(i * size, (i + 1) * size);
      templates[server]!.bytes.copy(slot);
      fill(slot, templates[server]!);
    }
  });

  const serversCpu = () => serverPids.reduce((sum, pid) => sum + processCpuMs(pid), 0);
  const serversSched = () =>
    serverPids.map(mainThreadSchedMs).reduce((a, b) => ({ onCpu: a.onCpu + b.onCpu, waiting: a.waiting + b.waiting }), { onCpu: 0, waiting: 0 });
  const cpuBefore = serversCpu();
  const schedBefore = serversSched();
  const storeBefore = storePid ? treeCpuMs(storePid) : 0;
  const hostBefore = hostTicks();
  const clientBefore = process.cpuUsage();
  const clientSchedBefore = mainThreadSchedMs(process.pid);
  measuring = true;
  const start = performance.now();
  const end = start + durationMs;
  if (rate) {
    const interval = 1000 / rate;
    let scheduled = 0;
    const idle: Connection[] = [];
    const backlog: number[] = [];
    const dispatch = () => {
      while (idle.length > 0 && backlog.length > 0) sendPooled(idle.pop()!, backlog.shift()!);
    };
    for (const conn of connections) {
      conn.onIdle = () => {
        idle.push(conn);
        dispatch();
      };
      idle.push(conn);
    }
    // Between sends the client sleeps in steps of at most NAP_MS instead of spinning on
    // setImmediate: a spinning client took its whole core, which a target's other processes
    // (a database server, a second replica) share. A response read up to NAP_MS late adds at
    // most that to its latency, the same for every target.
    const nap = new Int32Array(new SharedArrayBuffer(4));
    while (performance.now() < end && scheduled < maxRequests) {
      const due = Math.floor((performance.now() - start) / interval);
      while (scheduled <= due && scheduled < maxRequests) backlog.push(start + scheduled++ * interval);
      dispatch();
      await new Promise((r) => setImmediate(r)); // reads the answers that arrived
      const untilNext = start + scheduled * interval - performance.now();
      if (untilNext > 0.05 && backlog.length === 0) Atomics.wait(nap, 0, 0, Math.min(untilNext, NAP_MS));
    }
    sent = scheduled;
    // Everything scheduled is still sent and answered: a stall shows in the latencies.
    await new Promise<void>((resolve) => {
      const check = () => (backlog.length === 0 && idle.length === connections.filter((c) => !c.socket.destroyed).length ? resolve() : setTimeout(check, 5));
      check();
    });
  } else {
    await Promise.all(
      connections.map(
        (conn) =>
          new Promise<void>((resolve) => {
            const next = () => {
              if (performance.now() < end && sent < maxRequests && !conn.socket.destroyed) {
                sent++;
                sendPooled(conn, performance.now());
              } else resolve();
            };
            conn.onIdle = next;
            conn.socket.once('close', resolve);
            next();
          }),
      ),
    );
  }
  const elapsedMs = performance.now() - start;
  const serverCpuMs = serverPids.length > 0 ? serversCpu() - cpuBefore : undefined;
  const schedAfter = serversSched();
  const storeCpuMs = storePid ? treeCpuMs(storePid) - storeBefore : undefined;
  const hostAfter = hostTicks();
  const client = process.cpuUsage(clientBefore);
  measuring = false;
  for (const conn of connections) conn.socket.destroy();
  const sorted = latencies.slice(0, done).sort();
  const round = (n: number) => Math.round(n * 1000) / 1000;
  return {
    sent,
    ok: statuses['200'] ?? 0,
    statuses,
    errors,
    elapsedMs: round(elapsedMs),
    rps: Math.round((done / elapsedMs) * 1000),
    latencyMs: {
      p50: round(percentile(sorted, 50)),
      p90: round(percentile(sorted, 90)),
      p99: round(percentile(sorted, 99)),
      max: round(sorted[sorted.length - 1] ?? 0),
    },
    ...(serverCpuMs === undefined ? {} : { serverCpuMs, serverCpuShare: round(serverCpuMs / elapsedMs) }),
    ...(serverPids.length > 0
      ? {
          serverMainThread: {
            onCpu: round((schedAfter.onCpu - schedBefore.onCpu) / serverPids.length / elapsedMs),
            waitingForCpu: round((schedAfter.waiting - schedBefore.waiting) / serverPids.length / elapsedMs),
          },
        }
      : {}),
    ...(storeCpuMs === undefined ? {} : { storeCpuMs }),
    ...(() => {
      const share = (i: number) => round((hostAfter[i]!.busy - hostBefore[i]!.busy) / Math.max(1, hostAfter[i]!.total - hostBefore[i]!.total));
      return { hostBusyShare: share(0), coreBusyShare: hostAfter.slice(1).map((_, i) => share(i + 1)) };
    })(),
    clientCpuShare: round((client.user + client.system) / 1000 / elapsedMs),
    repeated,
    clientWaitingForCpu: round((mainThreadSchedMs(process.pid).waiting - clientSchedBefore.waiting) / elapsedMs),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const options = JSON.parse(process.argv[2] ?? '{}') as LoadOptions;
  runLoad(options).then(
    (result) => process.stdout.write(`${JSON.stringify(result)}\n`),
    (error) => {
      process.stderr.write(`load client: ${(error as Error).message}\n`);
      process.exit(1);
    },
  );
}
