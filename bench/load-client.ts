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
 * request rate; latency is measured from the scheduled send time, so a stall is not hidden).
 * Given `serverPid`, it also reads the server's CPU time over the measured phase only.
 *
 * Run as a process: `node --import tsx bench/load-client.ts '<json options>'` prints a JSON result.
 */
import { createHmac, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';

export interface LoadOptions {
  url: string;
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
  /** The server's process id: its CPU time over the measured phase is reported. */
  serverPid?: number;
  /**
   * Deliveries signed before the measured phase, sent in turn, then again from the first.
   * Default: what the rate needs, or 20 per ms of a closed-loop run (at most 40,000).
   */
  poolSize?: number;
}

export interface LoadResult {
  sent: number;
  ok: number;
  statuses: Record<string, number>;
  errors: number;
  elapsedMs: number;
  rps: number;
  latencyMs: { p50: number; p90: number; p99: number; max: number };
  /** With `serverPid`: the server's CPU time (user + system) during the measured phase. */
  serverCpuMs?: number;
  /** With `serverPid`: that CPU time as a share of one core over the phase (1 = a full core). */
  serverCpuShare?: number;
  /**
   * With `serverPid`: the server's main thread on a CPU, and waiting in a run queue for one
   * (another process had it), as shares of the phase. Their sum near 1: the server, not the
   * client, set the pace, even on a host where other work takes CPU from it.
   */
  serverMainThread?: { onCpu: number; waitingForCpu: number };
  /** The client's own CPU time over the phase as a share of one core (near 1: the client limits). */
  clientCpuShare: number;
  /** The client's main thread waiting for a CPU, as a share of the phase. */
  clientWaitingForCpu: number;
  /** Requests that repeated an earlier delivery of the pool (0 unless the pool ran out). */
  repeated: number;
}

/** A plausible pod event padded to `size` bytes of JSON. */
export function eventBody(size: number, eventId: string): Buffer {
  const base = {
    id: eventId,
    type: 'pod.status.changed',
    created_at: new Date().toISOString(),
    data: {
      pod: { id: randomUUID(), name: 'agent-pod', slug: 'agent-pod', status: 'provisioning', tier: 'starter', model: 'managed' },
      previous_status: 'provisioning',
      pad: '',
    },
  };
  const without = Buffer.byteLength(JSON.stringify(base));
  base.data.pad = 'x'.repeat(Math.max(0, size - without));
  return Buffer.from(JSON.stringify(base));
}

/** CPU time (user + system) of a process, in ms (from /proc/<pid>/stat, 100 Hz ticks). */
export function processCpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** The main thread's time on a CPU and waiting for one, in ms (/proc/<pid>/schedstat, ns). */
export function mainThreadSchedMs(pid: number): { onCpu: number; waiting: number } {
  const [onCpu, waiting] = readFileSync(`/proc/${pid}/schedstat`, 'utf8').trim().split(' ').map(Number);
  return { onCpu: onCpu! / 1e6, waiting: waiting! / 1e6 };
}

const ID_MARK = '00000000-0000-4000-8000-000000000000';
const T_MARK = '0000000000';
const SIG_MARK = '0'.repeat(64);

/**
 * One request as bytes, with the places of its event id (header and body), `t` and `v1`, so a
 * new delivery is a few writes into the same buffer.
 */
function requestTemplate(target: URL, bodyBytes: number, eventType: string) {
  const body = eventBody(bodyBytes, ID_MARK);
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
  const { url, secret, durationMs, rate, bodyBytes = 1024, maxRequests = 2_000_000, eventType = 'pod.status.changed', serverPid } = options;
  const poolSize = options.poolSize ?? (rate ? Math.ceil((rate * durationMs) / 1000) + 1 : Math.min(40_000, Math.max(1000, durationMs * 20)));
  const target = new URL(url);
  if (!['127.0.0.1', 'localhost', '[::1]'].includes(target.hostname)) throw new Error('load client: loopback only');
  const connectionCount = options.concurrency ?? 64;
  const template = requestTemplate(target, bodyBytes, eventType);
  const latencies = new Float64Array(maxRequests);
  const statuses: Record<string, number> = {};
  let measuring = false;
  let sent = 0;
  let done = 0;
  let errors = 0;
  let t = 0;
  let tPrefix = '';
  let tSecond = -1;

  /** Writes a fresh delivery (new id, current `t`, its signature) into a connection's buffer. */
  const fill = (bytes: Buffer) => {
    const second = Math.floor(Date.now() / 1000);
    if (second !== tSecond) {
      tSecond = second;
      t = second;
      tPrefix = `${t}.`;
    }
    const id = randomUUID();
    bytes.write(id, template.headerId, 'latin1');
    bytes.write(id, template.bodyId, 'latin1');
    bytes.write(String(t), template.t, 'latin1');
    const v1 = createHmac('sha256', secret).update(tPrefix).update(bytes.subarray(template.bodyStart)).digest('hex');
    bytes.write(v1, template.sig, 'latin1');
  };

  interface Connection {
    socket: Socket;
    bytes: Buffer;
    reader: ResponseReader;
    /** When the request in flight was due (latency origin), or undefined when idle. */
    since: number | undefined;
    onIdle: () => void;
  }

  const open = (): Promise<Connection> =>
    new Promise((resolve, reject) => {
      const socket = connect({ host: target.hostname.replace(/^\[|\]$/g, ''), port: Number(target.port || 80), noDelay: true });
      const conn: Connection = { socket, bytes: Buffer.from(template.bytes), reader: new ResponseReader(), since: undefined, onIdle: () => {} };
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
    fill(conn.bytes);
    conn.since = due;
    conn.socket.write(conn.bytes);
  };
  const size = template.bytes.byteLength;
  const poolCount = Math.max(1, Math.min(poolSize, maxRequests));
  const pool = Buffer.allocUnsafe(poolCount * size);
  let next = 0;
  let repeated = 0;
  /** Measured phase: the next pre-signed delivery of the pool. */
  const sendPooled = (conn: Connection, due: number) => {
    const at = (next % poolCount) * size;
    if (next++ >= poolCount) repeated++;
    conn.since = due;
    conn.socket.write(pool.subarray(at, at + size));
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

  for (let i = 0; i < poolCount; i++) {
    const slot = pool.subarray(i * size, (i + 1) * size);
    template.bytes.copy(slot);
    fill(slot);
  }

  const cpuBefore = serverPid ? processCpuMs(serverPid) : 0;
  const schedBefore = serverPid ? mainThreadSchedMs(serverPid) : undefined;
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
    while (performance.now() < end && scheduled < maxRequests) {
      const due = Math.floor((performance.now() - start) / interval);
      while (scheduled <= due && scheduled < maxRequests) backlog.push(start + scheduled++ * interval);
      dispatch();
      await new Promise((r) => setImmediate(r));
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
  const serverCpuMs = serverPid ? processCpuMs(serverPid) - cpuBefore : undefined;
  const schedAfter = serverPid ? mainThreadSchedMs(serverPid) : undefined;
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
    ...(schedBefore && schedAfter
      ? {
          serverMainThread: {
            onCpu: round((schedAfter.onCpu - schedBefore.onCpu) / elapsedMs),
            waitingForCpu: round((schedAfter.waiting - schedBefore.waiting) / elapsedMs),
          },
        }
      : {}),
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
