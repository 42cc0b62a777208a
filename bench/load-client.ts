/**
 * The load client of the benchmark: unique, correctly signed deliveries of realistic size with a
 * fresh `t`, sent over keep-alive connections to 127.0.0.1 only, bounded in count and time.
 *
 * Two modes: `concurrency` (closed loop, maximum throughput) and `rate` (open loop at a fixed
 * request rate; latency is measured from the scheduled send time, so a stall is not hidden).
 *
 * Run as a process: `node --import tsx bench/load-client.ts '<json options>'` prints a JSON result.
 */
import { createHmac, randomUUID } from 'node:crypto';
import { Pool } from 'undici';

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
  eventType?: string;
}

export interface LoadResult {
  sent: number;
  ok: number;
  statuses: Record<string, number>;
  errors: number;
  elapsedMs: number;
  rps: number;
  latencyMs: { p50: number; p90: number; p99: number; max: number };
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

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const { url, secret, durationMs, rate, bodyBytes = 1024, maxRequests = 2_000_000, eventType = 'pod.status.changed' } = options;
  const target = new URL(url);
  if (!['127.0.0.1', 'localhost', '[::1]'].includes(target.hostname)) throw new Error('load client: loopback only');
  const connections = options.concurrency ?? 64;
  const pool = new Pool(target.origin, { connections, pipelining: 1, keepAliveTimeout: 30_000 });
  const latencies = new Float64Array(maxRequests);
  const statuses: Record<string, number> = {};
  let sent = 0;
  let done = 0;
  let errors = 0;

  const sendOne = async (scheduledAt: number) => {
    const eventId = randomUUID();
    const body = eventBody(bodyBytes, eventId);
    const t = Math.floor(Date.now() / 1000);
    const v1 = createHmac('sha256', secret).update(`${t}.`).update(body).digest('hex');
    try {
      const res = await pool.request({
        path: target.pathname,
        method: 'POST',
        body,
        headers: {
          'content-type': 'application/json',
          'x-svc-signature': `t=${t},v1=${v1}`,
          'x-svc-event-type': eventType,
          'x-svc-event-id': eventId,
        },
      });
      await res.body.dump();
      statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1;
    } catch {
      errors++;
    }
    latencies[done++] = performance.now() - scheduledAt;
  };

  // Warm up unmeasured: open the connections, let the JIT compile the client's own path.
  await Promise.all(Array.from({ length: Math.min(connections, 64) * 4 }, () => sendOne(performance.now())));
  done = 0;
  for (const k of Object.keys(statuses)) delete statuses[k];
  errors = 0;

  const start = performance.now();
  const end = start + durationMs;
  if (rate) {
    const interval = 1000 / rate;
    const inflight = new Set<Promise<void>>();
    while (performance.now() < end && sent < maxRequests) {
      const due = Math.floor((performance.now() - start) / interval);
      while (sent <= due && sent < maxRequests) {
        const p = sendOne(start + sent * interval);
        sent++;
        inflight.add(p);
        void p.finally(() => inflight.delete(p));
      }
      await new Promise((r) => setImmediate(r));
    }
    await Promise.all(inflight);
  } else {
    await Promise.all(
      Array.from({ length: connections }, async () => {
        while (performance.now() < end && sent < maxRequests) {
          sent++;
          await sendOne(performance.now());
        }
      }),
    );
  }
  const elapsedMs = performance.now() - start;
  await pool.close();
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
