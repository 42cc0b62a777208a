// Issue 44 (items 3 to 7): the pod client against services that misbehave, each a real HTTP
// server on 127.0.0.1 counting what reaches it: redirects, unbounded retry_after_seconds, answers
// without end, pages without end, codes and malformed answers that are no error.
import type { ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { createAccountLimits } from '../../../src/core/limits/account-limits.js';
import { createPodhookMetrics } from '../../../src/core/observability/podhook-metrics.js';
import { handlerPods } from '../../../src/core/pods/handler-pods.js';
import { createPodsClient, type PodsClientOptions } from '../../../src/core/pods/pods-client.js';
import { PodsError, PodsRateLimited } from '../../../src/core/pods/pods-error.js';
import type { PodsPage } from '../../../src/core/pods/pods-types.js';
import { openSqliteStore } from '../../../src/store/sqlite/sqlite-store.js';
import { json, serviceError, useFakeServices } from '../../helpers/fake-pods-service.js';
import { dbIn, useTempDir } from '../../helpers/temp-dir.js';

const KEY = 'svc_live_key_bounds_7f3a9c21';
const POD = '5b0c1a7e-7d33-4c55-9a71-2f0e3c4d5e6f';
const HOUR = 3_600_000;
const fakeService = useFakeServices();
const tempDir = useTempDir();
const stores: (() => void)[] = [];
afterEach(() => {
  for (const close of stores.splice(0)) close();
});

const failure = (promise: Promise<unknown>) => promise.then(() => { throw new Error('expected a rejection'); }, (e: unknown) => e as PodsError);
const client = (baseUrl: string, options: Partial<PodsClientOptions> = {}) => createPodsClient({ baseUrl, apiKey: KEY, ...options });
function sqlite() {
  const opened = openSqliteStore(dbIn(tempDir()));
  stores.push(() => opened.close());
  return opened.store;
}

/** Writes `total` bytes of a JSON-looking body in 64 KiB chunks, waiting for the socket, until it is closed; resolves with the bytes written. */
function streamFor(res: ServerResponse, total: number, headers: Record<string, string> = {}): Promise<number> {
  res.writeHead(200, { 'content-type': 'application/json', ...headers });
  const chunk = Buffer.alloc(64 * 1024, 0x20);
  return new Promise((resolve) => {
    let written = 0;
    const more = () => {
      while (written < total && !res.destroyed) {
        written += chunk.length;
        if (!res.write(chunk)) return void res.once('drain', more);
      }
      if (!res.destroyed) res.end();
      resolve(written);
    };
    res.on('close', () => resolve(written));
    more();
  });
}

describe('the pod client and redirects (44.3)', () => {
  it('follows none: a 307 to plain http on another host is redirect_refused naming the Location, and the key never reaches it', async () => {
    const elsewhere = await fakeService((_req, res) => json(res, 200, { pods: [], next_cursor: null }));
    const target = `${elsewhere.url.replace('127.0.0.1', 'localhost')}/pods/v1/pods?limit=100`;
    const moved = await fakeService((_req, res) => void res.writeHead(307, { location: target, 'x-request-id': 'edge-307' }).end());
    const error = await failure(client(moved.url).list({ pageSize: 100 }));
    expect(error).toBeInstanceOf(PodsError);
    expect(error).toMatchObject({ code: 'redirect_refused', status: 307, retryable: false, requestId: 'edge-307', operation: 'list' });
    expect(error.message).toContain(target);
    expect(moved.requests).toHaveLength(1);
    expect(elsewhere.requests).toEqual([]);
  });

  it('checks every URL by the rules of SVC_BASE_URL before sending: no plain http beyond loopback, no user or password', async () => {
    let sent = 0;
    const counting: typeof fetch = async () => {
      sent++;
      return new Response('{}');
    };
    for (const baseUrl of ['http://compute.example.com', 'https://user:hunter2@compute.example.com', 'ftp://compute.example.com']) {
      const error = await failure(client(baseUrl, { fetch: counting }).queueAction(POD, 'restart'));
      expect(error).toMatchObject({ code: 'invalid_request', status: 0, requestId: null, retryable: false, operation: 'queueAction' });
      expect(error.message).toContain('nothing was sent');
      expect(error.message).not.toContain('hunter2');
    }
    expect(sent).toBe(0);
  });
});

describe('the pod client and retry_after_seconds (44.4)', () => {
  it('reads it within 1 to 3,600 s: 1e12 holds the shared bucket an hour at most, and 1e13 makes no RangeError', async () => {
    const store = sqlite();
    const service = await fakeService((_req, res, n) => serviceError(res, 429, 'rate_limited', 'Too many requests.', { retry_after_seconds: n === 0 ? 1e12 : 1e13 }));
    const pods = client(service.url, { limits: createAccountLimits({ store }), maxWaitMs: 0 });
    const before = Date.now();
    const first = await failure(pods.queueAction(POD, 'restart'));
    expect(first).toBeInstanceOf(PodsRateLimited);
    const retryAt = (first as PodsRateLimited).retryAt;
    expect(retryAt).toBeGreaterThanOrEqual(before + HOUR - 1_000);
    expect(retryAt).toBeLessThanOrEqual(Date.now() + HOUR);
    // What the store holds for every replica: the first token back within the hour.
    const take = await store.takeRateTokens({ account: 'default', bucket: 'writes', capacity: 60, windowMs: 60_000, now: Date.now(), maxWaitMs: 0 });
    expect(take.granted).toBe(false);
    expect(take.waitMs).toBeLessThanOrEqual(HOUR);
    // A later call meets the bucket (nothing sent) with a readable time.
    const later = await failure(pods.chatTicket(POD));
    expect(later).toBeInstanceOf(PodsRateLimited);
    expect(later.message).toMatch(/no token before \d{4}-\d\d-\d\dT/);
    expect(service.requests).toHaveLength(1);

    // 1e13 s (no Date holds it), without shared limits: taken as the bound.
    const unbounded = await failure(client(service.url, { maxWaitMs: 0 }).list());
    expect(unbounded).toBeInstanceOf(PodsRateLimited);
    expect((unbounded as PodsRateLimited).retryAt).toBeLessThanOrEqual(Date.now() + HOUR);
    expect(unbounded.retryAfterSeconds).toBe(3_600);
    expect(unbounded.message).toMatch(/retry after \d{4}-/);
  });

  it('brings a token held beyond the bound (a store written before it) back within it', async () => {
    const store = sqlite();
    const bucket = { account: 'default', bucket: 'writes', capacity: 60, windowMs: 60_000 };
    await store.emptyRateBucket({ ...bucket, until: Date.now() + 1e15 });
    const error = await failure(createAccountLimits({ store }).acquire('writes', { maxWaitMs: 0 }));
    expect(error).toBeInstanceOf(PodsRateLimited);
    expect((error as PodsRateLimited).retryAt).toBeLessThanOrEqual(Date.now() + HOUR + 60_000);
    expect(error.message).toMatch(/no token before \d{4}-/);
  });

  it('waits out a fraction, a 0 and a string within the bounds', async () => {
    const offered: unknown[] = [0.2, 0, '2', -5, 'soon', null];
    const service = await fakeService((_req, res, n) =>
      n % 2 === 0 ? serviceError(res, 429, 'rate_limited', 'Too many requests.', offered[n / 2] === null ? undefined : { retry_after_seconds: offered[n / 2] }) : json(res, 200, { pods: [], next_cursor: null }),
    );
    const slept: number[] = [];
    const pods = client(service.url, { sleep: async (ms) => void slept.push(ms), maxWaitMs: 2 * HOUR });
    for (let i = 0; i < offered.length; i++) await pods.list();
    expect(slept).toEqual([1_000, 1_000, 2_000, HOUR, HOUR, 60_000]);
  });
});

describe('the pod client and the size of answers (44.5)', () => {
  it('reads an answer as a stream and cuts it at 8 MiB: answer_too_large, and the rest is never read', async () => {
    let written: Promise<number> = Promise.resolve(0);
    const service = await fakeService((_req, res) => void (written = streamFor(res, 100 * 1024 * 1024)));
    const error = await failure(client(service.url).list());
    expect(error).toMatchObject({ code: 'answer_too_large', status: 200, retryable: false, details: { max_bytes: 8 * 1024 * 1024 }, operation: 'list' });
    // The service could write what the socket buffers hold past the cut, not the 100 MB.
    expect(await written).toBeLessThan(24 * 1024 * 1024);
  });

  it('refuses a declared Content-Length over the cap before reading the body, and keeps a smaller cap of its own', async () => {
    const service = await fakeService((_req, res) => void streamFor(res, 2 * 1024 * 1024, { 'content-length': String(2 * 1024 * 1024) }));
    const error = await failure(client(service.url, { maxAnswerBytes: 1024 * 1024 }).actions(POD));
    expect(error).toMatchObject({ code: 'answer_too_large', details: { max_bytes: 1024 * 1024 } });
  });

  it('refuses a page with more pods than it asked for', async () => {
    const pods = Array.from({ length: 101 }, (_, i) => ({ id: `pod-${i}` }));
    const service = await fakeService((_req, res) => json(res, 200, { pods, next_cursor: null }));
    const error = await failure(client(service.url).list({ pageSize: 10 }));
    expect(error).toMatchObject({ code: 'unexpected_response', status: 200, operation: 'list' });
    expect(error.message).toContain('with 101 pods on a page of at most 10');
    expect((await failure(client(service.url).list())).message).toContain('with 101 pods on a page of at most 100');
  });
});

describe('the pod client and pages without end (44.6)', () => {
  async function walk(pages: AsyncGenerator<PodsPage>): Promise<{ seen: number; error: PodsError }> {
    let seen = 0;
    try {
      for await (const _page of pages) seen++;
    } catch (error) {
      return { seen, error: error as PodsError };
    }
    throw new Error('the walk ended without an error');
  }

  it('stops at a cursor the service gave before (c1, c2, c1): unexpected_response after one request per page', async () => {
    const service = await fakeService((_req, res, n) => json(res, 200, { pods: [{ id: `p${n}` }], next_cursor: n % 2 === 0 ? 'c1' : 'c2' }));
    const { seen, error } = await walk(client(service.url).pages({ pageSize: 1 }));
    expect(error).toMatchObject({ code: 'unexpected_response', retryable: false, operation: 'list', details: { reason: 'cursor_repeated', pages: 3 } });
    expect(seen).toBe(3);
    expect(service.requests.map((r) => new URL(r.url, service.url).searchParams.get('cursor'))).toEqual([null, 'c1', 'c2']);
  });

  it('stops a handler’s pages() the same way, and at the page limit when every cursor is new', async () => {
    const cycling = await fakeService((_req, res, n) => json(res, 200, { pods: [], next_cursor: n % 2 === 0 ? 'c1' : 'c2' }));
    const run = { requestId: () => undefined, timeLeftMs: () => 30_000, signal: new AbortController().signal };
    const inHandler = handlerPods(async () => client(cycling.url), run);
    expect((await walk(inHandler.pages())).error.details).toMatchObject({ reason: 'cursor_repeated' });
    expect(cycling.requests).toHaveLength(3);

    const endless = await fakeService((_req, res, n) => json(res, 200, { pods: [], next_cursor: `c${n}` }));
    const { seen, error } = await walk(handlerPods(async () => client(endless.url), run).pages({}, { maxPages: 5 }));
    expect(error).toMatchObject({ code: 'unexpected_response', details: { reason: 'page_limit', pages: 5 } });
    expect(error.message).toContain('after 5 pages');
    expect(seen).toBe(5);
    expect(endless.requests).toHaveLength(5);
  });

  it('stops at 1,000 pages by default', async () => {
    const endless = await fakeService((_req, res, n) => json(res, 200, { pods: [], next_cursor: `c${n}` }));
    const { seen, error } = await walk(client(endless.url).pages());
    expect(error.details).toMatchObject({ reason: 'page_limit', pages: 1_000 });
    expect(seen).toBe(1_000);
    expect(endless.requests).toHaveLength(1_000);
  }, 60_000);
});

describe('the pod client and what the service says (44.7)', () => {
  it('takes a 200 that is not JSON, or no JSON object, for an error: lastResult is unexpected_response, not undefined', async () => {
    const bodies = ['{"last_result": "truncated', '', '[1, 2]', 'null'];
    const service = await fakeService((_req, res, n) => void res.writeHead(200, { 'content-type': 'application/json' }).end(bodies[n]));
    for (let i = 0; i < bodies.length; i++) {
      const error = await failure(client(service.url).lastResult(POD));
      expect(error).toMatchObject({ code: 'unexpected_response', status: 200, retryable: false, operation: 'actions' });
    }
    // The documented gap stays: a JSON object without last_result is undefined (null while none is written).
    const empty = await fakeService((_req, res, n) => json(res, 200, n === 0 ? { actions: [] } : { actions: [], last_result: null }));
    expect(await client(empty.url).lastResult(POD)).toBeUndefined();
    expect(await client(empty.url).lastResult(POD)).toBeNull();
  });

  it('keeps codes off /metrics as they come: an unknown code is counted as other, and a code echoing the key never shows', async () => {
    const codes = [KEY, `denied for ${KEY}`, 'quota_exhausted_v2', `${KEY}_forbidden`, 'forbidden'];
    const service = await fakeService((req, res, n) => serviceError(res, 403, codes[n]!, `key ${req.headers['x-api-key']} refused`, { key: req.headers['x-api-key'] }));
    const metrics = createPodhookMetrics(sqlite());
    const pods = client(service.url, { observer: metrics.pods.observer });
    const errors: PodsError[] = [];
    for (let i = 0; i < codes.length; i++) errors.push(await failure(pods.queueAction(POD, 'restart')));
    // A code is a word: one that is (or carries) the key is no code, but an answer without the error shape.
    expect(errors.map((e) => e.code)).toEqual(['unexpected_response', 'unexpected_response', 'quota_exhausted_v2', 'unexpected_response', 'forbidden']);
    const page = await metrics.registry.render();
    expect(page).toContain('podhook_pods_calls_total{code="other",operation="queueAction"} 1');
    expect(page).toContain('podhook_pods_calls_total{code="unexpected_response",operation="queueAction"} 3');
    expect(page).toContain('podhook_pods_calls_total{code="forbidden",operation="queueAction"} 1');
    expect(page).not.toContain(KEY);
    expect(page).not.toContain('quota_exhausted_v2');
    for (const e of errors) expect(`${e.code} ${e.message} ${JSON.stringify(e.details)} ${e.stack}`).not.toContain(KEY);
  });
});
