/**
 * Runs parked on a 90 s sleep that come due together, on the Worker (issue 46 §2): N deliveries
 * (default 1,000) whose handler sleeps 90 s are sent to podhook's Worker in workerd (Miniflare, a
 * local D1 with the migrations), the bench waits until their wake time has passed, then fires the
 * cron handler until every run has woken: each cron run awaited, then a pause as long as it took
 * (rather than a minute), while webhook deliveries go out at a paced rate throughout. Webhooks
 * sent while a cron run was under way are compared with those sent in the pauses between them
 * (side by side, the same minutes of a noisy host), and with the same paced webhooks alone
 * before any run was parked.
 *
 *   node --import tsx bench/worker-parked.ts [--parked=1000] [--rate=20] [--baseline-ms=20000]
 *     [--vars=NAME=value,...] [--no-save | --out=<file>]
 *
 * The Worker is bench/targets/worker-parked.ts (podhook's createWorker with a sleeper handler, a
 * plain one for the webhooks, and its D1 binding counted per invocation: each cron run prints its
 * statement count). A woken run tells a sink on 127.0.0.1 (this process) its event id from a
 * durable step: "none twice" is every id told once; "all complete" every id told and every row
 * processed; "no invocation fails for D1's limits" every cron run ended `ok` with at most 1,000
 * statements (Workers Paid; local D1 enforces no such limit, so it is counted). Webhook latency is
 * measured from each request's scheduled send time (open loop), p50 and p99, baseline against
 * during the cron runs. Writes bench/results/worker-parked-<date>.json unless --no-save.
 */
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, createServer, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { WorkerOptions } from 'miniflare';
import { unstable_getMiniflareWorkerOptions } from 'wrangler';
import { signDelivery } from '../src/testing/sign.js';
import { eventBody } from './load-client.js';
import { applyMigrations, bundle, numberOption, option, ROOT, send, startWorkerd, type D1, type Signed } from './workerd-harness.js';

const parked = numberOption('parked', 1000);
const rate = numberOption('rate', 20);
const baselineMs = numberOption('baseline-ms', 10_000);
const save = !process.argv.includes('--no-save');
const outFile = option('out');
/** `--vars=NAME=value,NAME=value`: variables beside wrangler.toml's (DISPATCH_CONCURRENCY=4). */
const vars = Object.fromEntries((option('vars') ?? '').split(',').filter(Boolean).map((kv) => kv.split('=')));
const SECRET = 'whsec_bench_worker_parked_5d1c';
const SLEEP_MS = 90_000;
/** D1's queries per Worker invocation on Workers Paid. */
const D1_LIMIT = 1_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const percentile = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};
const round1 = (x: number) => Math.round(x * 10) / 10;

async function signed(type: string, body: Uint8Array | string): Promise<Signed> {
  const d = await signDelivery({ secret: SECRET, type, id: randomUUID(), body });
  return { headers: { ...d.headers, 'content-length': String(d.body.byteLength) }, body: Buffer.from(d.body) };
}

/**
 * Webhooks at `rate` a second until `until()` says stop: each one's latency from its scheduled
 * send time to the end of its answer, and its status.
 */
async function paced(url: URL, until: () => boolean): Promise<{ latencies: number[]; sentAt: number[]; statuses: Record<string, number> }> {
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  const latencies: number[] = [];
  const sentAt: number[] = [];
  const statuses: Record<string, number> = {};
  const inflight = new Set<Promise<void>>();
  const start = performance.now();
  for (let i = 0; !until(); i++) {
    const due = start + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    const id = randomUUID();
    const d = await signed('pod.status.changed', eventBody(1024, id));
    const p = new Promise<void>((resolve) => {
      const req = request({ host: '127.0.0.1', port: url.port, path: '/webhooks', method: 'POST', headers: d.headers, agent }, (res) => {
        res.resume();
        res.on('end', () => {
          statuses[res.statusCode!] = (statuses[res.statusCode!] ?? 0) + 1;
          latencies.push(performance.now() - due);
          sentAt.push(due);
          resolve();
        });
      });
      req.on('error', (error: NodeJS.ErrnoException) => {
        const key = `error ${error.code ?? error.message}`;
        statuses[key] = (statuses[key] ?? 0) + 1;
        resolve();
      });
      req.end(d.body);
    }).finally(() => inflight.delete(p));
    inflight.add(p);
  }
  await Promise.all(inflight);
  agent.destroy();
  return { latencies, sentAt, statuses };
}

const summary = (l: number[]) => ({ requests: l.length, p50_ms: round1(percentile(l, 50)), p99_ms: round1(percentile(l, 99)), max_ms: round1(Math.max(...l)) });

async function main() {
  const work = mkdtempSync(join(tmpdir(), 'podhook-worker-parked-'));
  // The sink woken runs report to: hits per event id.
  const woke = new Map<string, number>();
  const sink = createServer((req, res) => {
    const id = req.url!.slice(1);
    woke.set(id, (woke.get(id) ?? 0) + 1);
    req.resume();
    res.end('ok');
  }).listen(0, '127.0.0.1');
  await once(sink, 'listening');
  const sinkUrl = `http://127.0.0.1:${(sink.address() as { port: number }).port}`;
  const crons: Array<{ statements: number; ms: number }> = [];
  let stdout = '';
  let mf: Awaited<ReturnType<typeof startWorkerd>>['mf'] | undefined;
  try {
    console.log('bundling (wrangler deploy --dry-run) ...');
    const script = bundle(join(work, 'parked'), 'bench/targets/worker-parked.ts');
    const { workerOptions } = unstable_getMiniflareWorkerOptions(join(ROOT, 'wrangler.toml'));
    const started = await startWorkerd({
      name: 'podhook-parked',
      scriptPath: script,
      options: {
        compatibilityDate: workerOptions.compatibilityDate,
        compatibilityFlags: workerOptions.compatibilityFlags,
        d1Databases: workerOptions.d1Databases,
        bindings: { ...(workerOptions.bindings as Record<string, unknown>), SVC_WEBHOOK_SECRET: SECRET, WOKE_URL: sinkUrl, ...vars },
        d1Persist: join(work, 'd1'),
      } as WorkerOptions,
      onStdout(chunk) {
        stdout += chunk;
        let at: number;
        while ((at = stdout.indexOf('\n')) >= 0) {
          const line = stdout.slice(0, at);
          stdout = stdout.slice(at + 1);
          if (line.includes('"bench":"cron"')) crons.push(JSON.parse(line) as { statements: number; ms: number });
        }
      },
    });
    mf = started.mf;
    const db = (await mf.getD1Database('DB')) as unknown as D1;
    await applyMigrations(db);
    const worker = await mf.getWorker('podhook-parked');
    const count = async (sql: string) => (await db.prepare(sql).first<{ n: number }>())!.n;

    // Warm up, then the baseline: the paced webhooks alone.
    const warm = await send(started.url, await Promise.all(Array.from({ length: 200 }, () => signed('pod.status.changed', eventBody(1024, randomUUID())))), 16);
    if (warm['200'] !== 200) throw new Error(`warm-up: ${JSON.stringify(warm)}`);
    console.log(`baseline: ${rate} webhooks a second for ${baselineMs} ms`);
    const baseEnd = performance.now() + baselineMs;
    const baseline = await paced(started.url, () => performance.now() >= baseEnd);

    // Park N runs on a 90 s sleep.
    console.log(`parking ${parked} runs on ctx.sleep('90s') ...`);
    const parkedSent = Date.now();
    const toPark = await Promise.all(Array.from({ length: parked }, (_, i) => signed('pod.backup.failed', JSON.stringify({ pod: { id: `pod-${i}` }, n: i }))));
    const parkStatuses = await send(started.url, toPark, 16);
    if (parkStatuses['200'] !== parked) throw new Error(`parking: ${JSON.stringify(parkStatuses)}`);
    const parkedRows = "SELECT count(*) AS n FROM handler_attempts WHERE outcome = 'parked'";
    while ((await count(parkedRows)) < parked) await sleep(200);
    const parkMs = Date.now() - parkedSent;
    const lastWake = (await db.prepare("SELECT max(next_attempt_at) AS n FROM deliveries WHERE event_type = 'pod.backup.failed'").first<{ n: number }>())!.n;
    console.log(`parked in ${parkMs} ms; waiting ${Math.max(0, lastWake - Date.now())} ms for the last wake time`);
    await sleep(Math.max(0, lastWake - Date.now() + 1_000));

    // Every run due at once: cron runs, each followed by a pause as long as it took; webhooks throughout.
    const outcomes: string[] = [];
    const runs: Array<[number, number]> = [];
    const cronStart = performance.now();
    let done = false;
    const meanwhile = paced(started.url, () => done);
    while (woke.size < parked && outcomes.length < Math.ceil(parked / 10) + 10) {
      // Minute 1 of the hour: no prune run among them.
      const at = new Date();
      at.setUTCMinutes(1);
      const t0 = performance.now();
      const result = await worker.scheduled({ scheduledTime: at, cron: '* * * * *' });
      const t1 = performance.now();
      outcomes.push(result.outcome);
      runs.push([t0, t1]);
      await sleep(t1 - t0);
    }
    const cronMs = performance.now() - cronStart;
    done = true;
    const webhooks = await meanwhile;
    await sleep(500); // the last cron run's line
    const inRun = (t: number) => runs.some(([a, b]) => t >= a && t <= b);
    const during = webhooks.latencies.filter((_, i) => inRun(webhooks.sentAt[i]!));
    const between = webhooks.latencies.filter((_, i) => !inRun(webhooks.sentAt[i]!));

    const told = [...woke.values()];
    const processed = await count("SELECT count(*) AS n FROM deliveries WHERE event_type = 'pod.backup.failed' AND status = 'processed'");
    const report = {
      date: new Date().toISOString(),
      command: `node --import tsx bench/worker-parked.ts --parked=${parked} --rate=${rate} --baseline-ms=${baselineMs}${Object.keys(vars).length ? ` --vars=${Object.entries(vars).map(([k, v]) => `${k}=${v}`).join(',')}` : ''}`,
      head: (await import('node:child_process')).spawnSync('git', ['rev-parse', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).stdout.trim(),
      parked,
      sleep_ms: SLEEP_MS,
      parking_ms: parkMs,
      cron_runs: outcomes.length,
      cron_outcomes: Object.fromEntries([...new Set(outcomes)].map((o) => [o, outcomes.filter((x) => x === o).length])),
      cron_phase_ms: Math.round(cronMs),
      cron_run_ms: runs.map(([a, b]) => Math.round(b - a)),
      d1_statements_per_cron_run: { max: Math.max(...crons.map((c) => c.statements)), min: Math.min(...crons.map((c) => c.statements)), limit: D1_LIMIT },
      cron_runs_detail: crons,
      woken: { distinct: woke.size, told_once: told.filter((n) => n === 1).length, told_more_than_once: told.filter((n) => n > 1).length },
      rows_processed: processed,
      webhooks: {
        rate_per_s: rate,
        before_parking: { ...summary(baseline.latencies), statuses: baseline.statuses },
        between_cron_runs: summary(between),
        during_cron_runs: summary(during),
        statuses_cron_phase: webhooks.statuses,
        p99_during_over_between: Math.round((percentile(during, 99) / percentile(between, 99)) * 100) / 100,
        p99_during_over_before_parking: Math.round((percentile(during, 99) / percentile(baseline.latencies, 99)) * 100) / 100,
      },
    };
    console.log(JSON.stringify({ ...report, cron_runs_detail: undefined }, null, 2));
    const ok =
      woke.size === parked &&
      report.woken.told_more_than_once === 0 &&
      processed === parked &&
      outcomes.every((o) => o === 'ok') &&
      report.d1_statements_per_cron_run.max <= D1_LIMIT;
    console.log(ok ? 'all complete, none twice, every cron run ok within D1\'s queries per invocation' : 'FAILED: see above');
    if (save) {
      const file = outFile ?? join(ROOT, `bench/results/worker-parked-${report.date.slice(0, 10)}.json`);
      writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
      console.log(`wrote ${file}`);
    }
    if (!ok) process.exitCode = 1;
  } finally {
    await mf?.dispose();
    sink.close();
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
