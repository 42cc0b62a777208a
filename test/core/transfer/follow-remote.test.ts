// followRemote against a scripted export on a real HTTP server on 127.0.0.1, with the cursor in a
// real SQLite file and an injected clock and sleep: backoff on what may pass, a stop on what
// will not, the Worker's at-once answers polled, the position saved and resumed.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Delivery } from '../../../src/core/delivery.js';
import { exportLine } from '../../../src/core/transfer/delivery-export.js';
import { createExportClient, RemoteRefusedError, RemoteUnauthorizedError, RemoteUnavailableError } from '../../../src/core/transfer/export-client.js';
import { followRemote, type FollowRemoteOptions } from '../../../src/core/transfer/follow-remote.js';
import { createImporter } from '../../../src/core/transfer/import-deliveries.js';
import { createNodeSignatureCrypto } from '../../../src/node/node-crypto.js';
import { openSqliteStore } from '../../../src/store/sqlite/sqlite-store.js';
import { useTempDir } from '../../helpers/temp-dir.js';

const TOKEN = 'adm_follow_0123456789abcdef0123456789abcd';
const tempDir = useTempDir();
const servers: Server[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

type Answer = { status: number; body?: string; cursor?: string; location?: string };
/** A remote whose export answers from a script, one answer per request; it records what it was asked. */
async function scriptedRemote(answers: Answer[]) {
  const asked: Array<{ query: URLSearchParams; authorization?: string; method?: string }> = [];
  const server = createServer((req: IncomingMessage, res) => {
    const url = new URL(req.url!, 'http://x');
    asked.push({ query: url.searchParams, authorization: req.headers.authorization, method: req.method });
    const a = answers.shift() ?? { status: 200, body: '' };
    res.writeHead(a.status, { ...(a.cursor ? { 'x-podhook-next-cursor': a.cursor } : {}), ...(a.location ? { location: a.location } : {}) });
    res.end(a.body ?? '');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  servers.push(server);
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}/base`, asked };
}

const delivery = (n: number, type = 'pod.created', status: Delivery['status'] = 'processed'): Delivery => ({
  eventId: `00000000-0000-4000-8000-00000000000${n}`,
  eventType: type,
  signatureT: 1_790_000_000 + n,
  body: new TextEncoder().encode(`{"pod":{"id":"p${n}"}}`),
  headers: {},
  receivedAt: 1_790_000_000_000 + n,
  lastReceivedAt: 1_790_000_000_000 + n,
  deliveryCount: 1,
  status,
  attempts: 3,
  lastError: null,
  nextAttemptAt: null,
  processedAt: status === 'processed' ? 1_790_000_000_500 : null,
});

function setup(url: string, extra: Partial<FollowRemoteOptions> = {}) {
  const { store, close } = openSqliteStore(join(tempDir(), 'local.db'));
  const slept: number[] = [];
  const stored: string[] = [];
  const retries: string[] = [];
  const stop = new AbortController();
  let now = 1_800_000_000_000;
  const options: FollowRemoteOptions = {
    client: createExportClient({ baseUrl: url, token: TOKEN }),
    store,
    importDeliveries: createImporter({ store, crypto: createNodeSignatureCrypto() }),
    since: 1_790_000_000_000,
    signal: stop.signal,
    clock: () => now,
    sleep: async (ms) => {
      slept.push(ms);
      now += ms;
    },
    onStored: (rows) => stored.push(...rows.map((r) => `${r.delivery.eventId.slice(-1)}:${r.result.outcome}`)),
    onRetry: (error, ms, attempt) => retries.push(`${attempt} ${ms} ${error.message}`),
    // Off unless a test is about it: each sweep is one more request to script.
    sweep: null,
    ...extra,
  };
  return { store, close, options, slept, stored, retries, stop, advance: (ms: number) => void (now += ms) };
}

describe('followRemote', () => {
  it('retries a refused connection and 5xx with backoff, then stores the page as queued here and saves the cursor', async () => {
    const remote = await scriptedRemote([
      { status: 503 },
      { status: 502 },
      { status: 200, body: exportLine(delivery(1)) + exportLine(delivery(2, 'pod.backup.failed', 'dead')), cursor: 'c2' },
    ]);
    const t = setup(remote.url, { once: true });
    try {
      await expect(followRemote(t.options)).resolves.toEqual({ resumed: false });
      expect(t.slept).toEqual([1000, 2000]);
      expect(t.retries.map((r) => r.replace(/ http:\S+/, ''))).toEqual(['1 1000 answered 503', '2 2000 answered 502']);
      expect(t.stored).toEqual(['1:new', '2:new']);
      for (const n of [1, 2]) expect(await t.store.get(delivery(n).eventId)).toMatchObject({ status: 'queued', attempts: 0, lastError: null, processedAt: null });
      expect(await t.store.readListenPosition(`${new URL(remote.url).origin}/base`)).toEqual({ cursor: 'c2', since: 1_790_000_000_000 });
      // Read-only, bearer token, the API's route under the base path; since only on the first ask.
      expect(remote.asked.every((a) => a.method === 'GET' && a.authorization === `Bearer ${TOKEN}`)).toBe(true);
      expect(remote.asked[0]!.query.get('since')).toBe(new Date(1_790_000_000_000).toISOString());
      expect(remote.asked[0]!.query.get('wait')).toBeNull();
    } finally {
      t.close();
    }
  });

  it('resumes from the saved cursor; a delivery already stored here is a duplicate, not stored again', async () => {
    const remote = await scriptedRemote([
      { status: 200, body: exportLine(delivery(1)), cursor: 'c1' },
      { status: 200, body: exportLine(delivery(1)) + exportLine(delivery(3)), cursor: 'c3' },
    ]);
    const t = setup(remote.url, { once: true });
    try {
      await followRemote(t.options);
      await expect(followRemote({ ...t.options, since: 0 })).resolves.toEqual({ resumed: true });
      expect(remote.asked[1]!.query.get('cursor')).toBe('c1');
      expect(remote.asked[1]!.query.get('since')).toBeNull();
      expect(t.stored).toEqual(['1:new', '1:duplicate', '3:new']);
    } finally {
      t.close();
    }
  });

  it('a position is saved before any delivery came, so the next start is not "now" again', async () => {
    const remote = await scriptedRemote([{ status: 200 }, { status: 200 }]);
    const t = setup(remote.url, { once: true, since: 1_790_000_000_777 });
    try {
      await followRemote(t.options);
      await followRemote({ ...t.options, since: 1_999_000_000_000 });
      expect(remote.asked[1]!.query.get('since')).toBe(new Date(1_790_000_000_777).toISOString());
    } finally {
      t.close();
    }
  });

  it('following: long-polls with wait=25, and asks a remote that answers an empty page at once (the Worker) again after pollMs', async () => {
    const remote = await scriptedRemote([{ status: 200 }, { status: 200, body: exportLine(delivery(4)), cursor: 'c4' }]);
    const t = setup(remote.url, { pollMs: 2000 });
    try {
      const done = followRemote({ ...t.options, onStored: (rows) => rows.length > 0 && t.stop.abort() });
      await done;
      expect(remote.asked.map((a) => a.query.get('wait'))).toEqual(['25', '25']);
      expect(t.slept).toEqual([2000]);
      expect(await t.store.get(delivery(4).eventId)).toMatchObject({ status: 'queued' });
    } finally {
      t.close();
    }
  });

  it('--types: one exact type is filtered by the remote; patterns here, the cursor passing the others', async () => {
    const remote = await scriptedRemote([
      { status: 200, cursor: 'a' },
      { status: 200, body: exportLine(delivery(5)) + exportLine(delivery(6, 'pod.backup.completed')), cursor: 'c6' },
    ]);
    const t = setup(remote.url, { once: true });
    try {
      await followRemote({ ...t.options, types: ['pod.created'] });
      expect(remote.asked[0]!.query.get('type')).toBe('pod.created');
      await followRemote({ ...t.options, types: ['pod.backup.*', 'pod.renewed'] });
      expect(remote.asked[1]!.query.get('type')).toBeNull();
      expect(t.stored).toEqual(['6:new']);
      expect(await t.store.get(delivery(5).eventId)).toBeNull();
      expect((await t.store.readListenPosition(`${new URL(remote.url).origin}/base`))?.cursor).toBe('c6');
    } finally {
      t.close();
    }
  });

  it('skips a delivery the remote quarantined as a conflict: it was never dispatched there, so it does not run here', async () => {
    const remote = await scriptedRemote([
      { status: 200, body: exportLine(delivery(7, 'pod.created', 'quarantined')) + exportLine(delivery(8)), cursor: 'c8' },
    ]);
    const t = setup(remote.url, { once: true });
    try {
      await followRemote(t.options);
      expect(t.stored).toEqual(['8:new']);
      expect(await t.store.get(delivery(7).eventId)).toBeNull();
      expect((await t.store.readListenPosition(`${new URL(remote.url).origin}/base`))?.cursor).toBe('c8');
    } finally {
      t.close();
    }
  });

  it('sweeps the look-back window by time: a row committed after a later one was read is stored; the rest stay silent', async () => {
    // Row 2 was received before row 3 but committed after the page with row 3 was read.
    const remote = await scriptedRemote([
      { status: 200, body: exportLine(delivery(1)) + exportLine(delivery(3)), cursor: 'c3' },
      { status: 200, body: exportLine(delivery(1)) + exportLine(delivery(2)) + exportLine(delivery(3)), cursor: 'c3' },
    ]);
    const t = setup(remote.url, { once: true, sweep: { lookbackMs: 10_000, everyMs: 30_000 } });
    try {
      await followRemote(t.options);
      expect(t.stored).toEqual(['1:new', '3:new', '2:new']);
      const sweepAsked = remote.asked[1]!.query;
      expect(sweepAsked.get('since')).toBe(new Date(delivery(3).receivedAt - 10_000).toISOString());
      expect(sweepAsked.get('cursor')).toBeNull();
      expect(await t.store.get(delivery(2).eventId)).toMatchObject({ status: 'queued' });
      // The position stays where the cursor read: the sweep does not move it.
      expect((await t.store.readListenPosition(`${new URL(remote.url).origin}/base`))?.cursor).toBe('c3');
    } finally {
      t.close();
    }
  });

  it('following, the sweep runs once everyMs has passed, and a remote down meanwhile only skips it', async () => {
    const remote = await scriptedRemote([
      { status: 200, body: exportLine(delivery(1)), cursor: 'c1' },
      { status: 200, cursor: 'c1' }, // the long poll: nothing new (the clock says 25 s went by)
      { status: 503 }, // the sweep, skipped
      { status: 200, body: exportLine(delivery(2)), cursor: 'c2' },
    ]);
    let asks = 0;
    const t = setup(remote.url, { sweep: { lookbackMs: 10_000, everyMs: 20_000 } });
    const client = t.options.client;
    try {
      await followRemote({
        ...t.options,
        client: {
          remote: client.remote,
          page: async (q) => {
            const page = await client.page(q);
            if (++asks === 2) t.advance(25_000);
            return page;
          },
        },
        onStored: (rows) => rows.some((r) => r.delivery.eventId === delivery(2).eventId) && t.stop.abort(),
      });
      expect(remote.asked.map((a) => (a.query.get('cursor') ? 'cursor' : 'since'))).toEqual(['since', 'cursor', 'since', 'cursor']);
      expect(t.retries).toEqual([]);
    } finally {
      t.close();
    }
  });

  it('stops at once on a 401, a 404 and a redirect (never followed), and --once gives up after five failures in a row', async () => {
    const unauthorized = await scriptedRemote([{ status: 401, body: '{"error":{"code":"unauthorized"}}' }]);
    const a = setup(unauthorized.url, { once: true });
    await expect(followRemote(a.options)).rejects.toBeInstanceOf(RemoteUnauthorizedError);
    expect(a.slept).toEqual([]);
    a.close();
    const missing = await scriptedRemote([{ status: 404 }]);
    const b = setup(missing.url, { once: true });
    await expect(followRemote(b.options)).rejects.toThrow(RemoteRefusedError);
    b.close();
    const moved = await scriptedRemote([{ status: 301, location: 'https://elsewhere.example.com/_podhook/api/export' }]);
    const m = setup(moved.url, { once: true });
    await expect(followRemote(m.options)).rejects.toThrow(/redirects the export to https:\/\/elsewhere\.example\.com\/_podhook\/api\/export: give the final URL/);
    expect(moved.asked).toHaveLength(1);
    m.close();
    const down = await scriptedRemote(Array.from({ length: 6 }, () => ({ status: 500 })));
    const c = setup(down.url, { once: true });
    await expect(followRemote(c.options)).rejects.toBeInstanceOf(RemoteUnavailableError);
    expect(c.slept).toEqual([1000, 2000, 4000, 8000]);
    c.close();
  });

  it('a connection refused is retried, naming the cause, never the token', async () => {
    // A port nothing listens on any more.
    const closed = await scriptedRemote([]);
    servers.pop()!.close();
    const t = setup(closed.url, { once: true, onceMaxAttempts: 2 });
    try {
      await expect(followRemote(t.options)).rejects.toBeInstanceOf(RemoteUnavailableError);
      expect(t.retries).toEqual([`1 1000 ${closed.url} could not be reached (ECONNREFUSED)`]);
      expect(t.retries.join()).not.toContain(TOKEN);
    } finally {
      t.close();
    }
  });
});
