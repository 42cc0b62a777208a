/**
 * What ctx.waitForEvent's ingest check costs per delivery, in-process (no load client, no
 * network), beside what a delivery costs whole:
 *
 *   node --import tsx bench/wait-check-cost.ts [ROUNDS] [DELIVERIES]      (default 5 rounds of 20000)
 *
 * Each round runs two variants, each in a fresh process, the order rotating: `nobody`, no run
 * waits (every delivery pays the check: one comparison with the process's flag, read from the
 * store once per DISPATCH_POLL_MS); `one-waits`, one run parked at a wait on a pod the traffic is
 * not about (every delivery pays the whole check: its pod read, the waits on that pod queried).
 * Both know where `pod.status.changed` carries its pod (`orderFields: data.pod.id`). A variant's
 * figure is the CPU time (user + system) of its process from the first delivery to the last
 * one's handlers done, per delivery. Then, in this process, the check alone while no one waits
 * (`mayWake` on a stored delivery), in ns per call.
 */
import { createHmac, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfig } from '../src/core/config.js';
import { defineHandler } from '../src/core/events/define-handler.js';
import { createPodLocator } from '../src/core/pods/pod-locator.js';
import { createEventWaits } from '../src/core/waits/index.js';
import { createNodeLogger } from '../src/node/logger.js';
import { createNodeRuntime } from '../src/node/node-runtime.js';
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { eventBody } from './load-client.js';
import { measureVariant, median, variantRounds } from './variant-rounds.js';

const SECRET = 'wait-check-secret-0123456789';
const TYPE = 'pod.status.changed';
const VARIANTS = ['nobody', 'one-waits'] as const;
type Variant = (typeof VARIANTS)[number];
const payloads = { orderFields: { podId: 'data.pod.id', occurredAt: null } };

const handlers = [
  defineHandler('pod.status.changed', async function noteStatus() {}),
  defineHandler('pod.renewal_failed', async function awaitRenewal(_event, ctx) {
    await ctx.waitForEvent('renewed', { type: 'pod.renewed', timeout: '1h' });
  }),
];

function request(type: string, body: Buffer, id: string) {
  const t = Math.floor(Date.now() / 1000);
  const v1 = createHmac('sha256', SECRET).update(`${t}.`).update(body).digest('hex');
  return new Request('http://podhook.bench/webhooks', {
    method: 'POST',
    body: new Uint8Array(body),
    headers: { 'content-type': 'application/json', 'x-svc-event-type': type, 'x-svc-event-id': id, 'x-svc-signature': `t=${t},v1=${v1}` },
  });
}

async function child(variant: Variant, count: number): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'podhook-wait-cost-'));
  const config = parseConfig({ DATABASE_PATH: join(dir, 'podhook.db'), SVC_WEBHOOK_SECRET: SECRET });
  const logger = createNodeLogger({ level: 'info', destination: { write: () => true } as never });
  const runtime = createNodeRuntime({ config, logger, handlers, payloads });
  if (variant === 'one-waits') {
    const id = randomUUID();
    const answer = await runtime.app.request(request('pod.renewal_failed', Buffer.from(JSON.stringify({ data: { pod: { id: randomUUID() } } })), id));
    if (answer.status !== 200) throw new Error(`answer ${answer.status}`);
    await runtime.dispatcher.runUntilIdle();
    if ((await runtime.store.waitsOf([id])).length !== 1) throw new Error('the run does not wait');
  }
  const run = async (n: number) => {
    for (let sent = 0; sent < n; sent += 32) {
      const answers = await Promise.all(Array.from({ length: Math.min(32, n - sent) }, () => {
        const id = randomUUID();
        return runtime.app.request(request(TYPE, eventBody(1024, id), id));
      }));
      if (answers.some((a) => a.status !== 200)) throw new Error(`answer ${answers.find((a) => a.status !== 200)!.status}`);
    }
    await runtime.dispatcher.runUntilIdle();
    // The wakes run after the answers (setImmediate): let them finish inside the measured time.
    await new Promise((resolve) => setImmediate(resolve));
  };
  await measureVariant(variant, count, run, async () => {
    await runtime.close(100);
    rmSync(dir, { recursive: true, force: true });
  });
}

/** The check alone while no run waits: ns per `mayWake` of a queued delivery with a known pod place. */
async function checkAlone(): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'podhook-wait-cost-'));
  const opened = openSqliteStore(join(dir, 'podhook.db'));
  const waits = createEventWaits({ store: opened.store, locator: createPodLocator(payloads), clock: Date.now, refreshMs: 1000 });
  await waits.flag.read();
  const d = { eventId: randomUUID(), eventType: TYPE, status: 'queued', receivedAt: Date.now(), payload: JSON.parse(eventBody(1024, randomUUID()).toString('utf8')) } as never;
  let woke = 0;
  const N = 5_000_000;
  for (let i = 0; i < 100_000; i++) if (waits.mayWake(d)) woke++;
  const start = process.hrtime.bigint();
  for (let i = 0; i < N; i++) if (waits.mayWake(d)) woke++;
  const ns = Number(process.hrtime.bigint() - start) / N;
  opened.close();
  rmSync(dir, { recursive: true, force: true });
  if (woke > 2) throw new Error('the check asked for a wake while no one waits');
  return ns;
}

async function main(rounds: number, count: number): Promise<void> {
  const figures = variantRounds('bench/wait-check-cost.ts', VARIANTS, rounds, count);
  const m = Object.fromEntries(VARIANTS.map((v) => [v, median(figures[v])])) as Record<Variant, number>;
  const ratio = median(figures['one-waits'].map((x, i) => x / figures.nobody[i]!));
  const ns = await checkAlone();
  console.log(JSON.stringify({ rounds, deliveries: count, median_us_per_delivery: m, one_waits_vs_nobody: ratio, check_alone_ns: ns, check_share_of_delivery: ns / 1000 / m.nobody, figures }, null, 1));
}

const args = process.argv.slice(2);
if (args[0] === '--child') await child(args[1] as Variant, Number(args[2]));
else await main(Number(args[0] ?? 5), Number(args[1] ?? 20_000));
