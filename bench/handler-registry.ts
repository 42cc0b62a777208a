/**
 * The registry of the handler series (bench/handler-series.ts): the project's handlers plus
 * `work` on the load client's type (pod.status.changed), whose body BENCH_WORK picks, and two
 * that misbehave on types of their own:
 * - `BENCH_WORK=none` (default): returns; `step`: one durable step; `sleep`: parks at a durable
 *   sleep of BENCH_SLEEP_MS (default 100) and runs on when woken;
 * - `compute` on pod.created: computes for BENCH_CPU_MS (default 200) on the thread it runs on;
 * - `spin` on pod.active: `while (true) {}`, a mistake that never gives its thread back.
 * Written as JavaScript beside the build (dist/bench/…), since `npm start`'s node runs no TypeScript.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './harness.js';

export const HANDLER_REGISTRY = 'dist/bench/podhook-handlers/index.js';

export function writeHandlerRegistry(): void {
  mkdirSync(join(ROOT, 'dist/bench/podhook-handlers'), { recursive: true });
  writeFileSync(
    join(ROOT, HANDLER_REGISTRY),
    `import { handlers as project } from '../../handlers/index.js';
import { defineHandler } from '../../src/index.js';

const work = process.env.BENCH_WORK ?? 'none';
const cpuMs = Number(process.env.BENCH_CPU_MS ?? 200);
const nap = Number(process.env.BENCH_SLEEP_MS ?? 100);

export const handlers = [
  ...project,
  defineHandler('pod.status.changed', async function work_(event, { step, sleep }) {
    if (work === 'step') await step('one', () => ({ id: event.id }));
    else if (work === 'sleep') await sleep('nap', nap);
  }),
  defineHandler('pod.created', async function compute() {
    const until = performance.now() + cpuMs;
    while (performance.now() < until) {}
  }),
  defineHandler('pod.active', async function spin() {
    for (;;) {}
  }),
];
`,
  );
}
