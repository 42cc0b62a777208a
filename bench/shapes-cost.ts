/**
 * What a learned payload module costs per delivery, in-process (no load client, no network), to
 * read beside `npm run bench`'s podhook/podhook-shapes figures on a host too busy for them:
 *
 *   node --import tsx bench/shapes-cost.ts [ROUNDS] [DELIVERIES]      (default 5 rounds of 20000)
 *
 * Each round runs three variants, each in a fresh process (in turn, the order rotating): `none`,
 * no payload module (podhook before issue 26); `shipped`, the module handlers/_payloads.ts as
 * shipped, learned from nothing; `learned`, a module learned from the bench's own payloads, so
 * every delivery is checked for drift and parsed by its schema. A variant's figure is the CPU
 * time (user + system) of its process from the first delivery to the last one's handlers done,
 * per delivery: ingest (signature, store, answer), the drift check, dispatch and the handlers.
 */
import { createHmac, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfig } from '../src/core/config.js';
import { inferShapes, shapeToZod } from '../src/core/shapes/index.js';
import { createNodeLogger } from '../src/node/logger.js';
import { createNodeRuntime } from '../src/node/node-runtime.js';
import * as project from '../handlers/index.js';
import { eventBody } from './load-client.js';
import { measureVariant, median, variantRounds } from './variant-rounds.js';

const SECRET = 'shapes-cost-secret-0123456789';
const TYPE = 'pod.status.changed';
const VARIANTS = ['none', 'shipped', 'learned'] as const;
type Variant = (typeof VARIANTS)[number];

async function child(variant: Variant, count: number): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'podhook-shapes-cost-'));
  const config = parseConfig({ DATABASE_PATH: join(dir, 'podhook.db'), SVC_WEBHOOK_SECRET: SECRET });
  const learned = inferShapes(Array.from({ length: 200 }, (_, i) => ({ eventType: TYPE, payload: JSON.parse(eventBody(1024, randomUUID()).toString('utf8')) as unknown, receivedAt: i })));
  // The learned module's exports as the generated module gives them (its schema built at run time).
  const payloads =
    variant === 'none'
      ? undefined
      : variant === 'shipped'
        ? { schemas: project.payloadSchemas, shapes: project.payloadShapes, fields: project.payloadFields }
        : { schemas: { ...project.payloadSchemas, [TYPE]: shapeToZod(learned.types[TYPE]!.shape) }, shapes: learned };
  const logger = createNodeLogger({ level: 'info', destination: { write: () => true } as never });
  const runtime = createNodeRuntime({ config, logger, handlers: project.handlers, payloads });
  const request = () => {
    const id = randomUUID();
    const body = eventBody(1024, id);
    const t = Math.floor(Date.now() / 1000);
    const v1 = createHmac('sha256', SECRET).update(`${t}.`).update(body).digest('hex');
    return new Request('http://podhook.bench/webhooks', {
      method: 'POST',
      body: new Uint8Array(body),
      headers: { 'content-type': 'application/json', 'x-svc-event-type': TYPE, 'x-svc-event-id': id, 'x-svc-signature': `t=${t},v1=${v1}` },
    });
  };
  const run = async (n: number) => {
    for (let sent = 0; sent < n; sent += 32) {
      const answers = await Promise.all(Array.from({ length: Math.min(32, n - sent) }, () => runtime.app.request(request())));
      if (answers.some((a) => a.status !== 200)) throw new Error(`answer ${answers.find((a) => a.status !== 200)!.status}`);
    }
    await runtime.dispatcher.runUntilIdle();
  };
  await measureVariant(variant, count, run, async () => {
    await runtime.close(100);
    rmSync(dir, { recursive: true, force: true });
  });
}

function main(rounds: number, count: number): void {
  const figures = variantRounds('bench/shapes-cost.ts', VARIANTS, rounds, count);
  const m = Object.fromEntries(VARIANTS.map((v) => [v, median(figures[v])])) as Record<Variant, number>;
  // Ratios per round (the variants of one round ran side by side), then their median.
  const ratio = (a: Variant, b: Variant) => median(figures[a].map((x, i) => x / figures[b][i]!));
  console.log(JSON.stringify({ rounds, deliveries: count, median_us_per_delivery: m, shipped_vs_none: ratio('shipped', 'none'), learned_vs_shipped: ratio('learned', 'shipped'), learned_vs_none: ratio('learned', 'none') }, null, 1));
}

const args = process.argv.slice(2);
if (args[0] === '--child') await child(args[1] as Variant, Number(args[2]));
else main(Number(args[0] ?? 5), Number(args[1] ?? 20_000));
