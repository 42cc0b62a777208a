// `podhook serve` with handler threads, its handlers calling the pod service (ctx.pods, in a step)
// on a fake service that counts each request: a key rotated while it runs (47 item 6), a 429's
// wait (47 item 7), and an answer that repeats the API key (44 item 7).
import { randomUUID } from 'node:crypto';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { POD_ACTION_REGISTRY } from '../fixtures/registry-paths.js';
import { json, serviceError, useFakeServices } from '../helpers/fake-pods-service.js';
import { send } from '../helpers/replicas.js';
import { signDelivery, TEST_SECRET } from '../helpers/sign.js';
import { runCli, spawnServer, type ServerProcess } from '../helpers/spawn-podhook.js';
import { dbIn, useTempDir } from '../helpers/temp-dir.js';

const POD = '5b0c1a7e-7d33-4c55-9a71-2f0e3c4d5e6f';
const QUEUED = { action: { queued: 'restart', result_available: false, poll: `/pods/v1/pods/${POD}/actions`, note: '' } };
const fakeService = useFakeServices();
const tempDir = useTempDir();
const servers: ServerProcess[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.child.kill('SIGKILL');
});

async function serve(env: Record<string, string>) {
  const db = dbIn(tempDir());
  const server = await spawnServer({ DATABASE_PATH: db, SVC_WEBHOOK_SECRET: TEST_SECRET, HANDLER_THREADS: '1', DISPATCH_POLL_MS: '100', ...env }, { handlers: POD_ACTION_REGISTRY });
  servers.push(server);
  const deliver = async () => {
    const d = signDelivery({ t: Math.floor(Date.now() / 1000), eventType: 'pod.backup.failed', eventId: randomUUID(), body: { pod: { id: POD }, backupId: randomUUID() } });
    expect((await send(server.url, d)).status).toBe(200);
    return d.eventId;
  };
  const row = (eventId: string) => {
    const conn = new Database(db, { readonly: true });
    try {
      return conn.prepare('select status, attempts, last_error from deliveries where event_id = ?').get(eventId) as { status: string; attempts: number; last_error: string | null };
    } finally {
      conn.close();
    }
  };
  const settled = (eventId: string, status: string, timeout = 15_000) => vi.waitFor(() => expect(row(eventId)?.status).toBe(status), { timeout, interval: 50 });
  return { db, server, deliver, row, settled };
}

describe('podhook serve with handler threads, calling the pod service', () => {
  it('uses a key rotated with `podhook secrets add --api-key` while it runs: the delivery after it is processed, not dead (47 item 6)', { timeout: 60_000 }, async () => {
    const [OLD, NEW] = ['svc_key_revoked_threads_01', 'svc_key_rotated_threads_02'];
    const accepted = { key: OLD };
    const service = await fakeService((req, res) => (req.headers['x-api-key'] === accepted.key ? json(res, 202, QUEUED) : serviceError(res, 401, 'unauthorized', 'Missing or invalid X-API-Key.')));
    const db = dbIn(tempDir());
    expect((await runCli(['secrets', 'add', '--api-key'], { DATABASE_PATH: db }, `${OLD}\n`)).code).toBe(0);
    const server = await spawnServer({ DATABASE_PATH: db, SVC_WEBHOOK_SECRET: TEST_SECRET, SVC_BASE_URL: service.url, HANDLER_THREADS: '1', DISPATCH_POLL_MS: '100' }, { handlers: POD_ACTION_REGISTRY });
    servers.push(server);
    const status = (eventId: string) => {
      const conn = new Database(db, { readonly: true });
      try {
        return (conn.prepare('select status from deliveries where event_id = ?').get(eventId) as { status: string } | undefined)?.status;
      } finally {
        conn.close();
      }
    };
    const deliver = async () => {
      const d = signDelivery({ t: Math.floor(Date.now() / 1000), eventType: 'pod.backup.failed', body: { pod: { id: POD }, backupId: randomUUID() } });
      expect((await send(server.url, d)).status).toBe(200);
      return d.eventId;
    };
    const first = await deliver();
    await vi.waitFor(() => expect(status(first)).toBe('processed'), { timeout: 15_000, interval: 50 });
    // Revoked at the service, replaced in podhook by another process.
    accepted.key = NEW;
    expect((await runCli(['secrets', 'add', '--api-key'], { DATABASE_PATH: db }, `${NEW}\n`)).code).toBe(0);
    const second = await deliver();
    await vi.waitFor(() => expect(status(second)).toBe('processed'), { timeout: 15_000, interval: 50 });
    const after = service.requests.slice(1).map((r) => r.apiKey);
    // The old key at most once more (read under a second before), then the new one.
    expect(after.at(-1)).toBe(NEW);
    expect(after.filter((k) => k === OLD).length).toBeLessThanOrEqual(1);
    expect(server.output()).not.toContain(NEW);
    expect(server.output()).not.toContain(OLD);
  });

  it('retries a call parked on a 429 with retry_after_seconds: 2 about 2 s after it, however many writes came before (47 item 7)', { timeout: 60_000 }, async () => {
    // Fourteen actions answered, then a 429 asking for 2 s, then answers again.
    const service = await fakeService((_req, res, n) => (n === 14 ? serviceError(res, 429, 'rate_limited', 'Too many requests.', { retry_after_seconds: 2 }) : json(res, 202, QUEUED)));
    // A handler's call waits for its bucket at most half its 3 s: a 2 s wait parks the run.
    const t = await serve({ SVC_BASE_URL: service.url, SVC_API_KEY: 'svc_key_parked_threads_03', HANDLER_TIMEOUT_MS: '3000' });
    const first = await Promise.all(Array.from({ length: 14 }, () => t.deliver()));
    for (const id of first) await t.settled(id, 'processed');
    const parked = await t.deliver();
    await vi.waitFor(() => expect(service.requests).toHaveLength(16), { timeout: 10_000, interval: 20 });
    await t.settled(parked, 'processed');
    const [refused, retried] = [service.requests[14]!, service.requests[15]!];
    expect(retried.requestId).toBe(refused.requestId);
    // Not sooner than the service asked, and not much later (it was 16 s).
    expect(retried.at - refused.at).toBeGreaterThanOrEqual(2_000);
    expect(retried.at - refused.at).toBeLessThan(3_500);
    expect(t.row(parked)).toMatchObject({ status: 'processed', attempts: 1 });
  });

  it('keeps an API key the service repeats in its code, message and details off /metrics, the log and the stored error (44 item 7)', { timeout: 60_000 }, async () => {
    const KEY = 'svc_key_echoed_threads_04';
    const service = await fakeService((req, res) => serviceError(res, 403, `${req.headers['x-api-key']}`, `key ${req.headers['x-api-key']} may not`, { key: req.headers['x-api-key'] }));
    const t = await serve({ SVC_BASE_URL: service.url, SVC_API_KEY: KEY });
    const ids = [await t.deliver(), await t.deliver()];
    for (const id of ids) await t.settled(id, 'dead');
    expect(service.requests).toHaveLength(2);
    const metrics = await (await fetch(`${t.server.url}/metrics`)).text();
    expect(metrics).toContain('podhook_pods_calls_total{code="unexpected_response",operation="queueAction"} 2');
    expect(metrics).not.toContain(KEY);
    expect(t.server.output()).not.toContain(KEY);
    for (const id of ids) expect(t.row(id).last_error).not.toContain(KEY);
    expect(t.row(ids[0]!).last_error).toContain('PodsError: unexpected_response in queueAction');
  });
});
