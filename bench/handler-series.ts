/**
 * The handler series of `npm run bench` (alone: `npm run bench -- --series=handlers`): what a
 * handler can do to the receiver's answers, and what durable steps cost. podhook as `npm start`
 * runs it, with bench/handler-registry.ts's handlers, pinned as in the main series (core 0; the
 * load client on core 1) unless a variant says otherwise.
 *
 * 1. `cpu_handler`: deliveries of pod.created at 20 a second, its handler computing 200 ms each
 *    (BENCH_CPU_MS) against the same handler computing 0 ms: the answers' p99 side by side, with
 *    handler threads (the default), with HANDLER_THREADS=0, and with threads given both cores.
 *    (HANDLER_THREADS=0: 4 s phases, its answers fall behind for good.)
 *    Each measurement starts its server afresh (a fresh database), so no backlog of 200 ms runs
 *    left by one variant burns the core under the next; rounds rotate the order.
 * 2. `endless_loop`: one delivery whose handler runs `while (true) {}` (HANDLER_TIMEOUT_MS=2000)
 *    and meanwhile 50 deliveries a second of another type: their answers' p99 against the same
 *    server's p99 before, the looping run's recorded outcome, the thread restarts, and whether
 *    every other delivery was processed afterwards. Threads only: in the handler's thread
 *    (HANDLER_THREADS=0) the loop stops every answer for good (test/node/handler-threads.test.ts).
 * 3. `steps`: CPU per delivery from receipt to processed, for a handler that returns, one that
 *    records one durable step, and one that parks at a 100 ms durable sleep and runs on when woken:
 *    a full-load burst, then until no delivery is queued, the server's CPU (every thread) divided
 *    by the deliveries processed meanwhile.
 */
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { load, median, podhookArgs, round, SECRET, startTarget, type Running, type TargetSpec } from './harness.js';
import { HANDLER_REGISTRY } from './handler-registry.js';
import { eventBody, treeCpuMs, type LoadResult } from './load-client.js';
import { createHmac, randomUUID } from 'node:crypto';

export interface HandlerSeriesOptions {
  rounds: number;
  /** Each fixed-rate measurement of `cpu_handler` and `endless_loop`. */
  phaseMs: number;
  /** Each full-load burst of `steps`. */
  burstMs: number;
  log: (line: string) => void;
}

const spec = (name: string, env: Record<string, string>, cores?: string): TargetSpec => ({
  name,
  args: [...podhookArgs(), '--handlers', HANDLER_REGISTRY],
  env: { LOG_LEVEL: 'warn', ...env },
  ...(cores ? { cores } : {}),
});

const latency = (r: LoadResult) => ({ p50: r.latencyMs.p50, p99: r.latencyMs.p99, max: r.latencyMs.max, sent: r.sent, ok: r.ok });
const medians = (xs: ReturnType<typeof latency>[]) => ({
  p50_ms: round(median(xs.map((x) => x.p50))),
  p99_ms: round(median(xs.map((x) => x.p99))),
  max_ms: round(median(xs.map((x) => x.max))),
  rounds_p99_ms: xs.map((x) => round(x.p99)),
  sent: xs.reduce((a, x) => a + x.sent, 0),
  non_200: xs.reduce((a, x) => a + x.sent - x.ok, 0),
});
const ratio = (a: number, b: number) => (b > 0 ? Math.round((a / b) * 1000) / 1000 : null);

export async function runHandlerSeries(o: HandlerSeriesOptions) {
  const dir = mkdtempSync(join(tmpdir(), 'podhook-handlers-'));
  try {
    return { cpu_handler: await cpuHandler(o, dir), endless_loop: await endlessLoop(o, dir), steps: await stepsCost(o, dir) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Starts a target on a fresh database, warms its answer path (not its handlers' backlog), runs `f`, kills it. */
async function withTarget<T>(s: TargetSpec, dir: string, f: (r: Running, db: string) => Promise<T> | T): Promise<T> {
  const db = join(dir, `${s.name}-${Date.now()}.db`);
  const r = await startTarget(s, db);
  try {
    load({ url: r.url, secret: SECRET, durationMs: 1000, rate: 200, concurrency: 8 });
    return await f(r, db);
  } finally {
    for (const x of r.replicas) x.child.kill('SIGKILL');
    await new Promise((res) => setTimeout(res, 200));
  }
}

async function cpuHandler(o: HandlerSeriesOptions, dir: string) {
  const variants = [
    { key: 'threads', cores: undefined as string | undefined, env: {} as Record<string, string> },
    { key: 'in_thread', cores: undefined, env: { HANDLER_THREADS: '0' } },
    { key: 'threads_two_cores', cores: '0,1', env: {} },
  ].flatMap((v) => [
    { ...v, cpu: true, name: `cpu-${v.key}` },
    { ...v, cpu: false, name: `quiet-${v.key}` },
  ]);
  const samples = new Map(variants.map((v) => [v.name, [] as ReturnType<typeof latency>[]]));
  for (let round_ = 0; round_ < o.rounds; round_++) {
    const order = round_ % 2 === 0 ? variants : [...variants].reverse();
    for (const v of order) {
      // In the handler's thread the answers fall behind for good (4 s of work a second): a shorter phase.
      const durationMs = v.key === 'in_thread' ? Math.min(o.phaseMs, 4000) : o.phaseMs;
      const result = await withTarget(spec(v.name, { ...v.env, BENCH_CPU_MS: v.cpu ? '200' : '0' }, v.cores), dir, (r) =>
        paced(r, 20, durationMs, 'pod.created'),
      );
      samples.get(v.name)!.push(latency(result));
    }
    o.log(`handlers: cpu_handler round ${round_ + 1}/${o.rounds} done`);
  }
  const out: Record<string, unknown> = {};
  for (const key of ['threads', 'in_thread', 'threads_two_cores']) {
    const cpu = medians(samples.get(`cpu-${key}`)!);
    const quiet = medians(samples.get(`quiet-${key}`)!);
    out[key] = { with_200ms_handler: cpu, without: quiet, p99_ratio: ratio(cpu.p99_ms, quiet.p99_ms) };
  }
  return { rate: 20, event_type: 'pod.created', handler_cpu_ms: 200, ...out };
}

async function endlessLoop(o: HandlerSeriesOptions, dir: string) {
  const rounds: unknown[] = [];
  for (let round_ = 0; round_ < o.rounds; round_++) {
    rounds.push(
      await withTarget(spec('loop', { HANDLER_TIMEOUT_MS: '2000' }), dir, async (r, dbPath) => {
        const phase = () => paced(r, 50, o.phaseMs);
        const before = await phase();
        const loop = await sendOne(r, 'pod.active');
        const during = await phase();
        // Afterwards: every other delivery processed, and the looping run ended as a timeout.
        const db = new Database(dbPath, { readonly: true });
        const read = () => ({
          others_queued: (db.prepare(`select count(*) n from deliveries where event_type <> 'pod.active' and status = 'queued'`).get() as { n: number }).n,
          others_processed: (db.prepare(`select count(*) n from deliveries where event_type <> 'pod.active' and status = 'processed'`).get() as { n: number }).n,
          spin: db.prepare(`select outcome, error from handler_attempts where handler = 'spin' order by attempt`).all() as Array<{ outcome: string; error: string | null }>,
        });
        let after = read();
        for (const end = Date.now() + 60_000; (after.others_queued > 0 || after.spin.length === 0) && Date.now() < end; after = read()) {
          await new Promise((res) => setTimeout(res, 250));
        }
        db.close();
        const metrics = await (await fetch(`http://127.0.0.1:${r.port}/metrics`)).text();
        const restarts = metrics.split('\n').find((l) => l.startsWith('podhook_handler_thread_restarts_total{reason="timeout"}'));
        return {
          before: latency(before),
          during: latency(during),
          loop_answered: loop,
          others_processed: after.others_processed,
          others_queued: after.others_queued,
          spin_runs: after.spin.map((s) => `${s.outcome}: ${s.error ?? ''}`.slice(0, 120)),
          thread_restarts_timeout: restarts ? Number(restarts.split(' ').at(-1)) : 0,
        };
      }),
    );
    o.log(`handlers: endless_loop round ${round_ + 1}/${o.rounds} done`);
  }
  type Round = { before: ReturnType<typeof latency>; during: ReturnType<typeof latency> };
  const before = medians((rounds as Round[]).map((x) => x.before));
  const during = medians((rounds as Round[]).map((x) => x.during));
  return { rate: 50, handler_timeout_ms: 2000, before, during, p99_ratio: ratio(during.p99_ms, before.p99_ms), rounds };
}

/** One signed delivery of `eventType`; resolves with its answer's status (0: no answer within 30 s). */
async function sendOne(r: Running, eventType: string): Promise<number> {
  const id = randomUUID();
  const body = new Uint8Array(eventBody(1024, id));
  const t = Math.floor(Date.now() / 1000);
  const v1 = createHmac('sha256', SECRET).update(`${t}.`).update(body).digest('hex');
  const headers = { 'content-type': 'application/json', 'x-svc-signature': `t=${t},v1=${v1}`, 'x-svc-event-type': eventType, 'x-svc-event-id': id };
  return fetch(r.url, { method: 'POST', headers, body, signal: AbortSignal.timeout(30_000) }).then(
    (res) => res.status,
    () => 0,
  );
}

/**
 * An open loop at a low rate: `rate` deliveries a second for `durationMs`, each sent on time
 * whatever the earlier ones' answers, its latency counted from when it was due. (The load
 * client's fixed-rate mode is made for 1,000 req/s; at 20 a second its connections' warm-up
 * alone sends 32 at once.)
 */
async function paced(r: Running, rate: number, durationMs: number, eventType = 'pod.status.changed'): Promise<LoadResult> {
  const interval = 1000 / rate;
  const start = performance.now();
  const answers: Promise<{ ms: number; status: number }>[] = [];
  for (let i = 0; i * interval < durationMs; i++) {
    const due = start + i * interval;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((res) => setTimeout(res, wait));
    answers.push(sendOne(r, eventType).then((status) => ({ status, ms: performance.now() - due })));
  }
  const done = await Promise.all(answers);
  const sorted = done.map((a) => a.ms).sort((a, b) => a - b);
  const at = (p: number) => round(sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0);
  return { sent: done.length, ok: done.filter((a) => a.status === 200).length, latencyMs: { p50: at(50), p90: at(90), p99: at(99), max: at(100) } } as LoadResult;
}

export async function stepsCost(o: HandlerSeriesOptions, dir: string) {
  const works = ['none', 'step', 'sleep'] as const;
  const running = new Map<string, { r: Running; db: Database.Database }>();
  const costs = new Map<string, number[]>(works.map((w) => [w, []]));
  const rps = new Map<string, number[]>(works.map((w) => [w, []]));
  /** How long each burst's deliveries took to drain after it, and how many were processed. */
  const drains = new Map<string, Array<{ drain_ms: number; processed: number }>>(works.map((w) => [w, []]));
  try {
    for (const w of works) {
      const path = join(dir, `steps-${w}.db`);
      const r = await startTarget(spec(`steps-${w}`, { BENCH_WORK: w }), path);
      running.set(w, { r, db: new Database(path, { readonly: true }) });
      load({ url: r.url, secret: SECRET, durationMs: 1000, concurrency: 32 });
    }
    const count = (db: Database.Database, status: string) => (db.prepare(`select count(*) n from deliveries where status = ?`).get(status) as { n: number }).n;
    const drained = async (db: Database.Database) => {
      for (const end = Date.now() + 120_000; count(db, 'queued') > 0; ) {
        if (Date.now() > end) throw new Error('the handler series: deliveries still queued after 120 s');
        await new Promise((res) => setTimeout(res, 100));
      }
    };
    for (const { db } of running.values()) await drained(db);
    for (let round_ = 0; round_ < o.rounds; round_++) {
      const order = round_ % 2 === 0 ? works : [...works].reverse();
      for (const w of order) {
        const { r, db } = running.get(w)!;
        const processed = count(db, 'processed');
        const cpu = treeCpuMs(r.child.pid!);
        const result = load({ url: r.url, secret: SECRET, durationMs: o.burstMs, concurrency: 32 });
        const t0 = performance.now();
        await drained(db);
        const delivered = count(db, 'processed') - processed;
        costs.get(w)!.push(Math.round(((treeCpuMs(r.child.pid!) - cpu) * 1000) / Math.max(1, delivered)));
        rps.get(w)!.push(result.rps);
        drains.get(w)!.push({ drain_ms: Math.round(performance.now() - t0), processed: delivered });
      }
      o.log(`handlers: steps round ${round_ + 1}/${o.rounds} done`);
    }
  } finally {
    for (const { r, db } of running.values()) {
      db.close();
      r.child.kill('SIGKILL');
    }
  }
  const cost = (w: string) => median(costs.get(w)!);
  return {
    cpu_us_per_delivery: Object.fromEntries(works.map((w) => [w, cost(w)])),
    rounds_cpu_us_per_delivery: Object.fromEntries(costs),
    burst_rps: Object.fromEntries(works.map((w) => [w, round(median(rps.get(w)!))])),
    drains: Object.fromEntries(drains),
    one_step_vs_none: ratio(cost('step'), cost('none')),
    park_and_wake_vs_none: ratio(cost('sleep'), cost('none')),
    one_step_us: cost('step') - cost('none'),
    park_and_wake_us: cost('sleep') - cost('none'),
  };
}
