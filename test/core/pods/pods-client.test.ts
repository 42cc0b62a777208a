import { once } from 'node:events';
import { MessageChannel } from 'node:worker_threads';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createAccountLimits } from '../../../src/core/limits/account-limits.js';
import { createPodsClient, type PodsClientOptions } from '../../../src/core/pods/pods-client.js';
import { PodsError, PodsRateLimited } from '../../../src/core/pods/pods-error.js';
import { decodePodsAnswer } from '../../../src/core/pods/pods-operations.js';
import type { RawServiceAnswer } from '../../../src/core/pods/service-answer.js';
import type { PodsCallEvent, PodsWaitEvent } from '../../../src/core/pods/pods-observer.js';
import { REQUEST_ID_PATTERN } from '../../../src/core/pods/request-id.js';
import { startEmulator, type RunningEmulator, type StartEmulatorOptions } from '../../../src/emulator/start-emulator.js';
import { openSqliteStore } from '../../../src/store/sqlite/sqlite-store.js';
import { dbIn, useTempDir } from '../../helpers/temp-dir.js';

const KEY = 'svc_live_key_5b1e77c0a9d3';
const tempDir = useTempDir();
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function emulator(options: Partial<StartEmulatorOptions> = {}) {
  const requests: Request[] = [];
  const emu = await startEmulator({ apiKey: KEY, seedPods: 2, onRequest: (r) => void requests.push(r), ...options });
  cleanups.push(() => emu.close());
  return { emu, requests, pod: emu.emulator.pods.all()[0]!.id };
}

function client(emu: RunningEmulator, options: Partial<PodsClientOptions> = {}) {
  return createPodsClient({ baseUrl: emu.url, apiKey: KEY, ...options });
}

/** A real HTTP server answering every request with `respond` (answers the emulator never gives). */
async function answering(respond: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
  const server = createServer(respond);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  cleanups.push(() => new Promise<void>((r) => (server.close(() => r()), server.closeAllConnections())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const failure = (promise: Promise<unknown>) => promise.then(() => { throw new Error('expected a rejection'); }, (e: unknown) => e as PodsError);

describe('the pod client', () => {
  it('sends the key only as X-API-Key, an x-request-id on every call (the caller’s when given), and the configured names', async () => {
    const wire = { pageSizeParam: 'page_size', cursorParam: 'after', externalRefParam: 'ref', actionProperty: 'type' };
    const { emu, requests, pod } = await emulator({ wire });
    const pods = client(emu, { wire });
    await pods.list({ pageSize: 1, externalRef: 'demo-1' });
    await pods.queueAction(pod, 'logs', { requestId: 'step.abc-123_x' });
    await pods.chatTicket(pod);
    await pods.mintKey(pod, { name: 'deploy bot' });
    await pods.actions(pod);
    expect(requests).toHaveLength(5);
    const list = new URL(requests[0]!.url);
    expect([...list.searchParams.keys()].sort()).toEqual(['page_size', 'ref']);
    expect(await requests[1]!.clone().json()).toEqual({ type: 'logs' });
    expect(await requests[3]!.clone().json()).toEqual({ name: 'deploy bot' });
    expect(requests[1]!.headers.get('x-request-id')).toBe('step.abc-123_x');
    expect(emu.emulator.queuedActions()[0]!.request_id).toBe('step.abc-123_x');
    for (const r of requests) {
      expect(r.headers.get('x-api-key')).toBe(KEY);
      expect(r.headers.get('x-request-id')).toMatch(REQUEST_ID_PATTERN);
      expect(r.headers.get('authorization')).toBeNull();
      const elsewhere = [...r.headers].filter(([name, value]) => name !== 'x-api-key' && value.includes(KEY));
      expect(elsewhere).toEqual([]);
      expect(r.url).not.toContain(KEY);
    }
    expect(new Set(requests.map((r) => r.headers.get('x-request-id'))).size).toBe(5);
  });

  it('checks what the spec bounds before sending: pod id, action, page size, key name, request id', async () => {
    const { emu, requests, pod } = await emulator();
    const pods = client(emu);
    const cases: [Promise<unknown>, RegExp][] = [
      [pods.queueAction('not-a-uuid', 'restart'), /pod id must be a uuid/],
      [pods.queueAction(`${pod}/../x`, 'restart'), /pod id must be a uuid/],
      [pods.queueAction(pod, 'reboot' as never), /action must be one of restart, stop, redeploy, update, diagnose, logs/],
      [pods.list({ pageSize: 0 }), /pageSize must be a whole number from 1 to 100/],
      [pods.list({ pageSize: 101 }), /pageSize must be a whole number from 1 to 100/],
      [pods.mintKey(pod, { name: 'k'.repeat(61) }), /a key name is 1 to 60 characters \(got 61\)/],
      [pods.mintKey(pod, { name: '' }), /a key name is 1 to 60 characters/],
      [pods.chatTicket(pod, { requestId: 'short' }), /request id "short" is not 8 to 64/],
      [pods.chatTicket(pod, { requestId: 'has space in it' }), /is not 8 to 64 of A-Za-z0-9._-/],
    ];
    for (const [call, message] of cases) {
      const error = await failure(call);
      expect(error).toBeInstanceOf(PodsError);
      expect(error).toMatchObject({ code: 'invalid_request', status: 0, requestId: null, retryable: false });
      expect(error.message).toMatch(message);
      expect(error.message).toContain('nothing was sent');
    }
    expect(requests).toEqual([]);
  });

  it('fails with a PodsError carrying the code, status, request id and details; retryable only where the same call may succeed', async () => {
    const { emu, pod } = await emulator();
    const pods = client(emu);
    const cases: [number, string, boolean][] = [
      [404, 'not_found', false],
      [400, 'invalid_request', false],
      [403, 'forbidden', false],
      [403, 'capability_disabled', false],
      [401, 'unauthorized', false],
      [500, 'internal', true],
    ];
    for (const [status, code, retryable] of cases) {
      emu.emulator.injectFault({ count: 1, status, code, message: `emulated ${code}`, details: { capability: 'wallet' } });
      const error = await failure(pods.queueAction(pod, 'restart', { requestId: `req-${code}` }));
      expect(error).toMatchObject({ code, status, requestId: `req-${code}`, retryable, operation: 'queueAction', details: { capability: 'wallet' } });
    }
    const missing = await failure(pods.queueAction(crypto.randomUUID(), 'restart'));
    expect(missing).toMatchObject({ code: 'not_found', status: 404, retryable: false });
    expect(missing.requestId).toMatch(REQUEST_ID_PATTERN);
    const wrongKey = await failure(createPodsClient({ baseUrl: emu.url, apiKey: 'svc_wrong_key_000' }).list());
    expect(wrongKey).toMatchObject({ code: 'unauthorized', status: 401, retryable: false });
  });

  it('reports no answer as a retryable network_error, and a proxy’s error page as a retryable unexpected_response', async () => {
    const closed = await answering((_req, res) => res.writeHead(502, { 'x-request-id': 'edge-proxy-77' }).end('<html>Bad gateway</html>'));
    const page = await failure(createPodsClient({ baseUrl: closed, apiKey: KEY }).list());
    expect(page).toMatchObject({ code: 'unexpected_response', status: 502, requestId: 'edge-proxy-77', retryable: true });
    const silent = await answering(() => {});
    const timeout = await failure(createPodsClient({ baseUrl: silent, apiKey: KEY, timeoutMs: 200 }).list({}, { requestId: 'req-timeout-1' }));
    expect(timeout).toMatchObject({ code: 'network_error', status: 0, requestId: 'req-timeout-1', retryable: true });
    expect(timeout.message).toContain('no answer within 0.2 s');
    const odd = await answering((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"pods":"none"}'));
    expect(await failure(createPodsClient({ baseUrl: odd, apiKey: KEY }).list())).toMatchObject({ code: 'unexpected_response', status: 200, retryable: false });
  });

  it('never lets the API key into an error, even when the service repeats it', async () => {
    const echo = await answering((req, res) =>
      res
        .writeHead(403, { 'content-type': 'application/json' })
        .end(JSON.stringify({ error: { code: 'forbidden', message: `key ${req.headers['x-api-key']} may not do this`, details: { key: req.headers['x-api-key'], [`${req.headers['x-api-key']}`]: 1 } } })),
    );
    const error = await failure(createPodsClient({ baseUrl: echo, apiKey: KEY }).list());
    expect(error.code).toBe('forbidden');
    const shown = `${error.message} ${JSON.stringify(error.details)} ${String(error.stack)} ${JSON.stringify(error)}`;
    expect(shown).not.toContain(KEY);
    expect(error.message).toBe('key [redacted] may not do this');
  });

  it('aborts a call when its signal fires, with the signal’s reason', async () => {
    const silent = await answering(() => {});
    const controller = new AbortController();
    const call = createPodsClient({ baseUrl: silent, apiKey: KEY }).list({}, { signal: controller.signal });
    controller.abort(new Error('handler timed out'));
    await expect(call).rejects.toThrow('handler timed out');
  });

  it('after a 429, empties the shared bucket until retry_after_seconds: the call waits and is sent once more, and the other processes hold back', async () => {
    const { emu, requests, pod } = await emulator({ writeLimit: 2, writeWindowMs: 2_000 });
    const path = dbIn(tempDir());
    const [a, b] = [openSqliteStore(path), openSqliteStore(path)];
    cleanups.push(() => (a.close(), b.close()));
    const calls: PodsCallEvent[] = [];
    const waits: PodsWaitEvent[] = [];
    const limits = { writes: { capacity: 60, windowMs: 2_000 } }; // more generous than the service: it answers 429 first
    const pods = client(emu, { limits: createAccountLimits({ store: a.store, limits }), observer: { call: (e) => calls.push(e), wait: (e) => waits.push(e) }, maxWaitMs: 5_000 });
    await pods.queueAction(pod, 'restart');
    await pods.queueAction(pod, 'restart');
    const started = Date.now();
    await pods.queueAction(pod, 'restart', { requestId: 'third-action-1' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect(calls.map((c) => [c.operation, c.bucket, c.code])).toEqual([
      ['queueAction', 'writes', 'ok'],
      ['queueAction', 'writes', 'ok'],
      ['queueAction', 'writes', 'rate_limited'],
      ['queueAction', 'writes', 'ok'],
    ]);
    expect(waits).toEqual([{ operation: 'queueAction', bucket: 'writes', waitedMs: expect.any(Number) }]);
    expect(waits[0]!.waitedMs).toBeGreaterThanOrEqual(900);
    // The same request id both times; the action is queued once.
    expect(requests.slice(2).map((r) => r.headers.get('x-request-id'))).toEqual(['third-action-1', 'third-action-1']);
    expect(emu.emulator.queuedActions().filter((q) => q.request_id === 'third-action-1')).toHaveLength(1);

    // Another process on the same database: its bucket is paced from the service's time, so with
    // no time to wait it is refused before anything is sent.
    const other = client(emu, { limits: createAccountLimits({ store: b.store, limits }), maxWaitMs: 0 });
    await b.store.emptyRateBucket({ account: 'default', bucket: 'writes', capacity: 60, windowMs: 2_000, until: Date.now() + 10_000 });
    const sent = requests.length;
    const refused = await failure(other.chatTicket(pod));
    expect(refused).toBeInstanceOf(PodsRateLimited);
    expect(refused).toMatchObject({ code: 'rate_limited', bucket: 'writes', requestId: null, operation: 'chatTicket' });
    expect((refused as PodsRateLimited).retryAt).toBeGreaterThan(Date.now() + 8_000);
    expect(requests.length).toBe(sent);
    // Reads are another bucket.
    expect((await other.list()).pods).toHaveLength(2);
  });

  it('without shared limits, waits out a 429 that fits in maxWaitMs and throws PodsRateLimited for one that does not', async () => {
    const { emu, pod } = await emulator({ writeLimit: 1, writeWindowMs: 60_000 });
    await client(emu).queueAction(pod, 'stop');
    const error = await failure(client(emu, { maxWaitMs: 10_000 }).queueAction(pod, 'stop', { requestId: 'second-stop-1' }));
    expect(error).toBeInstanceOf(PodsRateLimited);
    expect(error).toMatchObject({ code: 'rate_limited', status: 429, requestId: 'second-stop-1', details: { retry_after_seconds: 60 }, retryable: true });
    expect((error as PodsRateLimited).retryAt).toBeGreaterThan(Date.now() + 50_000);
    const slept: number[] = [];
    emu.emulator.injectFault({ count: 1, status: 429, code: 'rate_limited', message: 'Too many requests.', details: { retry_after_seconds: 1 } });
    const sleep = async (ms: number) => void slept.push(ms);
    expect((await client(emu, { sleep }).list()).pods).toHaveLength(2);
    expect(slept).toEqual([1_000]);
  });

  it('walks every page with pages(), sending <id>.<n> for page n when given an id', async () => {
    const { emu, requests } = await emulator({ seedPods: 5 });
    const ids: string[] = [];
    for await (const page of client(emu).pages({ pageSize: 2 }, { requestId: 'walk-0001' })) ids.push(...page.pods.map((p) => p.id));
    expect(ids).toEqual(emu.emulator.pods.all().map((p) => p.id));
    expect(requests.map((r) => r.headers.get('x-request-id'))).toEqual(['walk-0001', 'walk-0001.2', 'walk-0001.3']);
  });

  it('reads an answer on one side and decodes it on the other: answer() gives the 2xx bytes, which transfer, and decodePodsAnswer types them', async () => {
    const { emu, pod } = await emulator({ seedPods: 3 });
    const pods = client(emu);
    const raw = await pods.answer('list', [{ pageSize: 2 }]);
    expect(raw.status).toBe(200);
    const { port1, port2 } = new MessageChannel();
    const arrived = once(port2, 'message') as Promise<[RawServiceAnswer]>;
    port1.postMessage(raw, [raw.bytes.buffer as ArrayBuffer]);
    const [moved] = await arrived;
    port1.close();
    expect(raw.bytes.byteLength).toBe(0); // transferred, not copied
    const page = decodePodsAnswer('list', moved, [{ pageSize: 2 }]);
    expect(page.pods.map((p) => p.id)).toEqual(emu.emulator.pods.all().slice(0, 2).map((p) => p.id));
    expect(page.next_cursor).toEqual(expect.any(String));
    expect(decodePodsAnswer('lastResult', await pods.answer('lastResult', [pod]), [pod])).toBeNull();
    // Non-2xx answers are errors on the side that holds the key (scrubbed there): answer() rejects.
    emu.emulator.injectFault({ count: 1, status: 403, code: 'forbidden', message: `no, ${KEY}` });
    const refused = await failure(pods.answer('queueAction', [pod, 'restart']));
    expect(refused).toMatchObject({ code: 'forbidden', status: 403, message: 'no, [redacted]', operation: 'queueAction' });
  });
});
