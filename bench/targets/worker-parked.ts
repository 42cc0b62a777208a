// The Worker of bench/worker-parked.ts: podhook's createWorker with two handlers, a sleeper that
// parks on ctx.sleep('90s') and then tells a sink on 127.0.0.1 (the bench's) that it woke, and a
// plain one for the webhooks timed meanwhile. Its D1 binding is counted per invocation (every
// statement, batched ones included), and each cron run prints one JSON line with its count.
import { AsyncLocalStorage } from 'node:async_hooks';
import { defineHandler } from '../../src/core/events/define-handler.js';
import { createWorker } from '../../src/worker/create-worker.js';
import type { WorkerEnv } from '../../src/worker/worker-env.js';

interface BenchEnv extends WorkerEnv {
  /** Where a woken run reports its event id (the bench's sink). */
  WOKE_URL: string;
}

const sleeper = defineHandler('pod.backup.failed', async function sleeper(event, ctx) {
  await ctx.sleep('nap', '90s');
  await ctx.step('woke', async () => {
    const res = await fetch(`${wokeUrl}/${event.id}`, { method: 'POST' });
    if (!res.ok) throw new Error(`sink answered ${res.status}`);
  });
});
const plain = defineHandler('pod.status.changed', async function plain() {});

let wokeUrl = '';
const podhook = createWorker({ handlers: [sleeper, plain] });
const counts = new AsyncLocalStorage<{ statements: number }>();

/** The binding with every statement counted into the current invocation's tally. */
function counted(db: D1Database): D1Database {
  const tally = (n: number) => {
    const c = counts.getStore();
    if (c) c.statements += n;
  };
  const watch = (s: D1PreparedStatement): D1PreparedStatement => {
    const bind = s.bind.bind(s);
    s.bind = (...values: unknown[]) => watch(bind(...values));
    for (const method of ['all', 'first', 'run', 'raw'] as const) {
      const original = (s[method] as (...a: unknown[]) => Promise<unknown>).bind(s);
      (s as unknown as Record<string, unknown>)[method] = (...args: unknown[]) => (tally(1), original(...args));
    }
    return s;
  };
  return {
    prepare: (sql: string) => watch(db.prepare(sql)),
    batch: (statements: D1PreparedStatement[]) => (tally(statements.length), db.batch(statements)),
    exec: (sql: string) => (tally(1), db.exec(sql)),
  } as unknown as D1Database;
}

/** One counted env per isolate (podhook keeps its wiring per env object). */
let wrapped: BenchEnv | undefined;
const envOf = (env: BenchEnv) => {
  wokeUrl = env.WOKE_URL;
  return (wrapped ??= { ...env, DB: counted(env.DB) });
};

export default {
  fetch: (request, env, ctx) => counts.run({ statements: 0 }, () => podhook.fetch!(request, envOf(env), ctx)),
  async scheduled(controller, env, ctx) {
    const tally = { statements: 0 };
    const started = Date.now();
    await counts.run(tally, () => podhook.scheduled!(controller, envOf(env), ctx));
    console.log(JSON.stringify({ bench: 'cron', statements: tally.statements, ms: Date.now() - started }));
  },
} satisfies ExportedHandler<BenchEnv>;
