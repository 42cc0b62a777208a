// The work one delivery costs, counted: store statements, syncs, messages between threads, body
// parses, schema runs, logger children, log lines, timers. Counts, not times: a change that adds
// work to every delivery makes this test fail, and has to say so here (with its paired A/B).
import { Writable } from 'node:stream';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/core/config.js';
import { enableWorkCounts, readWorkCounts, type WorkKind } from '../../src/core/observability/work-count.js';
import { loadValidRegistry } from '../../src/node/handler-registry.js';
import { createNodeLogger } from '../../src/node/logger.js';
import { startServer, type RunningServer } from '../../src/node/serve.js';
import { ONE_HANDLER_REGISTRY } from '../fixtures/registry-paths.js';
import { signDelivery, TEST_SECRET } from '../helpers/sign.js';
import { dbIn, useTempDir } from '../helpers/temp-dir.js';

enableWorkCounts();
const tempDir = useTempDir();
const servers: RunningServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close(1000);
});

/** Timers and immediates armed by podhook's own code in this thread (not the test's, not the HTTP client's). */
function countOwnTimers(): () => { timer: number; immediate: number } {
  const counts = { timer: 0, immediate: 0 };
  const g = globalThis as unknown as Record<string, (...args: unknown[]) => unknown>;
  const originals = { setTimeout: g.setTimeout!, setInterval: g.setInterval!, setImmediate: g.setImmediate! };
  for (const name of Object.keys(originals) as (keyof typeof originals)[]) {
    g[name] = (...args: unknown[]) => {
      const stack = new Error().stack ?? '';
      if (/\/src\/(core|node|store|http|runtime)\//.test(stack)) counts[name === 'setImmediate' ? 'immediate' : 'timer']++;
      return originals[name](...args);
    };
  }
  return () => {
    Object.assign(g, originals);
    return counts;
  };
}

async function serve(threads: number) {
  const dir = tempDir();
  const config = parseConfig({ DATABASE_PATH: dbIn(dir), SVC_WEBHOOK_SECRET: TEST_SECRET, HANDLER_THREADS: String(threads), HOST: '127.0.0.1', PORT: '0', DISPATCH_POLL_MS: '60000' });
  const { handlers, payloads, module } = await loadValidRegistry(ONE_HANDLER_REGISTRY);
  const logger = createNodeLogger({ destination: new Writable({ write: (_c, _e, cb) => cb() }) });
  const server = await startServer({ config, logger, handlers, payloads, handlersModule: threads > 0 ? module : undefined });
  servers.push(server);
  let n = 0;
  /** Sends one delivery and resolves once its outcome is recorded. */
  const deliver = async () => {
    const finished = new Promise<void>((resolve) => {
      const off = server.runtime.dispatcher.events.subscribe({ deliveryFinished: () => (off(), resolve()) });
    });
    const d = signDelivery({ t: Math.floor(Date.now() / 1000), eventType: 'pod.created', body: { pod_id: `p${++n}` } });
    const res = await fetch(`${server.url}/webhooks`, { method: 'POST', headers: d.headers, body: d.body });
    expect(res.status).toBe(200);
    await finished;
  };
  return { deliver, url: pathToFileURL(ONE_HANDLER_REGISTRY) };
}

async function perDelivery(threads: number, n = 4) {
  const s = await serve(threads);
  for (let i = 0; i < 3; i++) await s.deliver(); // warm-up: statements prepared, threads loaded
  const before = readWorkCounts();
  const stop = countOwnTimers();
  for (let i = 0; i < n; i++) await s.deliver();
  const own = stop();
  const after = readWorkCounts();
  const per: Partial<Record<WorkKind, number>> = {};
  for (const k of Object.keys(after) as WorkKind[]) per[k] = (after[k] - before[k]) / n;
  per.timer! += own.timer / n;
  per.immediate! += own.immediate / n;
  return per;
}

/**
 * One delivery of pod.created, run by one handler that succeeds and logs one line, sent when the
 * one before it is done (so no commit is shared): each figure with why it is needed. Under load
 * the outcome's commit joins the next claim's (fewer statements); never more.
 */
const SHARED = {
  // PRAGMA data_version (have the stored signing secrets changed?), the claim (BEGIN, INSERT,
  // COMMIT), the outcome (BEGIN, UPDATE, COMMIT: alone here; under load it joins a claim's commit).
  statement: 7,
  // The claim's WAL fsync before the 200; the outcome is not synced (a crash re-runs the delivery).
  sync: 1,
  // Ingest's parse (how the body is stored: queued, or dead as not JSON).
  body_parse: 1,
  // No learned schema, no handler schema.
  schema_run: 0,
  // No child logger per delivery or per call: lines carry their bindings.
  logger_child: 0,
  // `delivery` (the answer), the handler's own line, `handler run`.
  log_line: 3,
  // The call's time limit, and the outcome's commit deferred up to 10 ms to share a later one.
  timer: 2,
  // ctx.waitForEvent's check of a new delivery against waiting runs: none while no run waits (one
  // comparison with this process's flag, read from the store at most once per DISPATCH_POLL_MS:
  // here during the warm-up), so no statement, no turn of the loop.
  wait_check: 0,
};

describe('the work one delivery costs', () => {
  it('with handler threads: one message each way, the body parsed once more where the handler runs', async () => {
    expect(await perDelivery(1)).toEqual({
      ...SHARED,
      // `run` (the body a transferred buffer, the call) and `done` (its result and its line).
      message_to_thread: 1,
      message_from_thread: 1,
      // Ingest's parse, and the thread's (its heap holds the payload the handler gets).
      body_parse: 2,
      // secrets' data_version turn, the claim's group commit, the hand-off's adoption, the
      // outcome's batch, and the thread's one turn after the job (an error left behind fails its call).
      immediate: 5,
    });
  });

  it('in the receiver thread (HANDLER_THREADS=0): no message, the payload ingest parsed', async () => {
    expect(await perDelivery(0)).toEqual({
      ...SHARED,
      message_to_thread: 0,
      message_from_thread: 0,
      // secrets' data_version turn, the claim's group commit, the hand-off's adoption, the outcome's
      // batch (`podhook serve` adds the stray scope's turn after the job, as in a thread: not installed in a test's process).
      immediate: 4,
    });
  });
});
