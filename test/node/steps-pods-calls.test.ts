// Calls to the pod service from durable steps (issue 47 items 4 and 5), with handlers in the
// receiver's thread (HANDLER_THREADS=0) and in a handler thread: `podhook serve` in this process
// on 127.0.0.1, a real HTTP fake of the service recording each request's x-request-id, and the
// concurrent-step-handlers fixture appending each run's effects to a file its payload names.
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { parseConfig } from '../../src/core/config.js';
import { loadValidRegistry } from '../../src/node/handler-registry.js';
import { startServer, type RunningServer } from '../../src/node/serve.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { EffectLine } from '../fixtures/concurrent-step-handlers.js';
import { CONCURRENT_STEP_REGISTRY } from '../fixtures/registry-paths.js';
import { captureLogger } from '../helpers/capture-logger.js';
import { json, useFakeServices, type FakeService } from '../helpers/fake-pods-service.js';
import { readJsonLines } from '../helpers/jsonl.js';
import { signDelivery, TEST_SECRET } from '../helpers/sign.js';
import { dbIn, useTempDir } from '../helpers/temp-dir.js';

const ADMIN_TOKEN = 'adm_pods_calls_0123456789abcdef01234567';
const QUEUED = (pod: string) => ({ action: { queued: 'restart', result_available: false, poll: `/pods/v1/pods/${pod}/actions`, note: '' } });
const fakeService = useFakeServices();
const tempDir = useTempDir();
const started: RunningServer[] = [];
afterEach(async () => {
  for (const s of started.splice(0)) await s.close(500);
});

/** A fake service answering every action 202, recording each request. */
const queueingService = () => fakeService((req, res) => json(res, 202, QUEUED(/\/pods\/([^/]+)\//.exec(req.url ?? '')?.[1] ?? '')));

/**
 * `podhook serve` in this process with the fixture registry, its handlers in this thread (`0`) or
 * one thread of their own; on a fresh database, or on the one in `on.dir`, with only the handlers
 * `on.only` names (in this thread).
 */
async function serve(threads: '0' | '1', service: FakeService, env: Record<string, string> = {}, on: { dir?: string; only?: string[] } = {}) {
  const dir = on.dir ?? tempDir();
  const config = parseConfig({
    DATABASE_PATH: dbIn(dir),
    SVC_WEBHOOK_SECRET: TEST_SECRET,
    SVC_BASE_URL: service.url,
    SVC_API_KEY: 'svc_key_pods_calls_0123456789',
    HANDLER_THREADS: threads,
    HOST: '127.0.0.1',
    PORT: '0',
    DISPATCH_POLL_MS: '50',
    RETRY_BASE_MS: '20',
    ADMIN_TOKEN,
    ...env,
  });
  const registry = await loadValidRegistry(CONCURRENT_STEP_REGISTRY);
  const { only } = on;
  const handlers = only ? registry.handlers.filter((h) => only.includes(h.name)) : registry.handlers;
  const log = captureLogger();
  const server = await startServer({ config, logger: log.logger, handlers, payloads: registry.payloads, handlersModule: only ? undefined : registry.module });
  started.push(server);
  await server.handlersReady;
  const record = join(dir, 'effects.jsonl');
  const lines = () => readJsonLines<EffectLine>(record);
  const deliver = async (eventType: string, body: Record<string, unknown>) => {
    const d = signDelivery({ t: Math.floor(Date.now() / 1000), eventType, body: { record, ...body } });
    expect((await fetch(`${server.url}/webhooks`, { method: 'POST', headers: d.headers, body: d.body })).status).toBe(200);
    return d.eventId;
  };
  const status = async (id: string) => (await server.runtime.store.get(id))?.status;
  const settled = (id: string, want: string) => vi.waitFor(async () => expect(await status(id)).toBe(want), { timeout: 20_000, interval: 25 });
  const replayFresh = async (id: string) => {
    const res = await fetch(`${server.url}/_podhook/api/replay`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ event_ids: [id], fresh: true }),
    });
    expect(await res.json()).toEqual({ replayed: 1 });
  };
  return { dir, server, log, lines, deliver, status, settled, replayFresh };
}

/** The pod a request was about (`/pods/v1/pods/<id>/actions`). */
const podOf = (url: string) => /\/pods\/v1\/pods\/([^/]+)\//.exec(url)?.[1];

for (const threads of ['0', '1'] as const) {
  describe(`HANDLER_THREADS=${threads}`, () => {
    it('request ids follow each step by name, whatever the timing; a call outside any step has the run\'s own; a fresh run has new ones (47 item 4)', { timeout: 60_000 }, async () => {
      const service = await queueingService();
      const t = await serve(threads, service);
      const pods = { a: randomUUID(), b: randomUUID(), outside: randomUUID() };
      const id = await t.deliver('pod.backup.failed', { pods });
      // Both steps fail after their calls on the first run; the retry runs them again.
      await vi.waitFor(() => expect(t.lines().filter((l) => l.what === 'effect')).toHaveLength(2), { timeout: 20_000, interval: 25 });
      await t.settled(id, 'processed');
      const ids = (pod: string) => service.requests.filter((r) => podOf(r.url) === pod).map((r) => r.requestId);
      const effects = () => t.lines().filter((l) => l.what === 'effect');
      const key = (step: string) => effects().find((l) => l.step === step)?.key;
      const [ka, kb] = [key('call a'), key('call b')];
      expect(ka).toMatch(/^st_[0-9a-f]{40}$/);
      expect(kb).toMatch(/^st_[0-9a-f]{40}$/);
      expect(ka).not.toBe(kb);
      // Each step's calls: its key, then `.2`, the same on the retry.
      expect(ids(pods.a)).toEqual([ka, `${ka}.2`, ka, `${ka}.2`]);
      expect(ids(pods.b)).toEqual([kb, kb]);
      // The steps called in another order on the retry: ids by name, not by who came first.
      const firstOf = (pod: string, n: number) => service.requests.filter((r) => podOf(r.url) === pod)[n]!.at;
      expect(firstOf(pods.a, 0)).toBeLessThan(firstOf(pods.b, 0));
      expect(firstOf(pods.b, 1)).toBeLessThan(firstOf(pods.a, 2));
      // Outside any step, made while both steps ran: the run's id and its order, never a step's key.
      const runId = new RegExp(`^${id}\\.[0-9a-f]{8}\\.(\\d+)\\.1$`);
      expect(ids(pods.outside).map((r) => runId.exec(r ?? '')?.[1])).toEqual(['1', '2']);

      // A fresh run (the store drops the steps and starts a new generation): new keys, new ids.
      await t.replayFresh(id);
      await vi.waitFor(() => expect(effects()).toHaveLength(4), { timeout: 20_000, interval: 25 });
      await t.settled(id, 'processed');
      const fresh = effects().slice(2);
      const [fa, fb] = ['call a', 'call b'].map((s) => fresh.find((l) => l.step === s)!.key!);
      expect(fa).not.toBe(ka);
      expect(fb).not.toBe(kb);
      expect(ids(pods.a).slice(4)).toEqual([fa, `${fa}.2`, fa, `${fa}.2`]);
      expect(ids(pods.b).slice(2)).toEqual([fb, fb]);
      expect(ids(pods.outside).map((r) => runId.exec(r ?? '')?.[1])).toEqual(['1', '2', '3', '4']);
      // Every id the service saw, once per run: no two runs' calls share one unless they are a step's retry.
      expect(new Set(service.requests.map((r) => r.requestId)).size).toBe(10);
    });

    it('ctx.pods called 300 ms after the handler returned is refused with step_after_return; no request reaches the service (47 item 5)', { timeout: 30_000 }, async () => {
      const service = await queueingService();
      const t = await serve(threads, service);
      const id = await t.deliver('pod.created', { pods: { a: randomUUID() } });
      await t.settled(id, 'processed');
      await vi.waitFor(() => expect(t.lines().filter((l) => l.id === id)).toHaveLength(1), { timeout: 10_000, interval: 25 });
      const [late] = t.lines().filter((l) => l.id === id);
      expect(late).toMatchObject({ what: 'refused', code: 'step_after_return', error: expect.stringContaining('ctx.pods was called after the handler returned') });
      expect(service.requests).toHaveLength(0);
      expect(await t.server.runtime.store.get(id)).toMatchObject({ status: 'processed', attempts: 1, lastError: null });
    });

    it('a call waiting for its bucket token when the run times out is cancelled: no request is sent after the run ended (47 item 5)', { timeout: 40_000 }, async () => {
      const service = await queueingService();
      // One write per 2 s: the handler's second call waits for the token its first took, past its 1 s limit.
      const t = await serve(threads, service, { SVC_WRITE_LIMIT: '1/2s', DISPATCH_MAX_ATTEMPTS: '1' });
      const pods = { a: randomUUID(), b: randomUUID() };
      const id = await t.deliver('pod.expiring', { pods });
      await t.settled(id, 'dead');
      expect((await t.server.runtime.store.get(id))?.lastError).toMatch(/^tokenWait: HandlerTimeoutError: timed out after 1000 ms/);
      // The waiting call ended with the run, its wait cut short by the run's signal.
      const said = t.lines().filter((l) => l.id === id);
      expect(said.map((l) => l.what)).toEqual(['first sent', 'second refused']);
      expect(said[1]!.error).toMatch(/timed out after 1000 ms/);
      // A call after it waits for the next token and is sent: had the cancelled call kept its
      // place, its request would have come at the token before this one.
      const after = randomUUID();
      const marker = await t.deliver('pod.active', { pods: { a: after } });
      await t.settled(marker, 'processed');
      expect(service.requests.map((r) => podOf(r.url))).toEqual([pods.a, after]);
    });

    it('a call waiting for its bucket token when the receiver shuts down is cancelled: no request is sent after (47 item 5)', { timeout: 40_000 }, async () => {
      const service = await queueingService();
      const limits = { SVC_WRITE_LIMIT: '1/3s' };
      const t = await serve(threads, service, { ...limits, SHUTDOWN_GRACE_MS: '200' });
      const pods = { a: randomUUID(), b: randomUUID() };
      const id = await t.deliver('pod.destroyed', { pods });
      await vi.waitFor(() => expect(t.lines().map((l) => l.what)).toContain('first sent'), { timeout: 10_000, interval: 25 });
      // The second call waits about 3 s for its token; the receiver stops meanwhile.
      await t.server.close(200);
      started.splice(started.indexOf(t.server), 1);
      expect(service.requests.map((r) => podOf(r.url))).toEqual([pods.a]);
      // Interrupted, not failed: due again, no attempt counted.
      const stopped = openSqliteStore(dbIn(t.dir));
      expect(await stopped.store.get(id)).toMatchObject({ status: 'queued', attempts: 0 });
      stopped.close();
      // Another receiver on the same database (the same buckets) sends a call with the next
      // token: had the cancelled call kept its place, its request would have come before this one.
      const next = await serve('0', service, limits, { dir: t.dir, only: ['patientCall'] });
      const after = randomUUID();
      const marker = await next.deliver('pod.active', { pods: { a: after } });
      await next.settled(marker, 'processed');
      expect(service.requests.map((r) => podOf(r.url))).toEqual([pods.a, after]);
    });
  });
}
