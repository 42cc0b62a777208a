import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { useNodeServers } from '../helpers/serve-node.js';
import { signDelivery, type SignedDelivery } from '../helpers/sign.js';
import { useTempDir } from '../helpers/temp-dir.js';

const tempDir = useTempDir();
const serve = useNodeServers(tempDir);
const sockets: Socket[] = [];
// Registered after the servers' hook, so it runs before it: sockets go before their server.
afterEach(() => {
  for (const s of sockets.splice(0)) s.destroy();
});

const fresh = (body?: string) => signDelivery({ t: Math.floor(Date.now() / 1000), ...(body === undefined ? {} : { body }) });

/** A raw connection that collects what the server sends and notes when it closes. */
async function open(port: number) {
  const socket = connect(port, '127.0.0.1');
  sockets.push(socket);
  let received = '';
  let closed = false;
  socket.on('data', (c) => (received += c));
  socket.on('error', () => undefined);
  socket.on('close', () => (closed = true));
  await once(socket, 'connect');
  return { socket, received: () => received, closed: () => closed };
}

function head(d: SignedDelivery, extra: Record<string, string> = {}, length = d.body.byteLength) {
  const headers = { host: 'x', 'content-type': 'application/json', 'content-length': String(length), ...d.headers, ...extra };
  return `POST /webhooks HTTP/1.1\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}`).join('\r\n')}\r\n\r\n`;
}

const post = (url: string, d: SignedDelivery) => fetch(`${url}/webhooks`, { method: 'POST', headers: d.headers, body: d.body });

describe('server limits', () => {
  it('refuses connections beyond MAX_CONNECTIONS at once, and serves again once one closes', async () => {
    const { server } = await serve({ MAX_CONNECTIONS: '3' });
    const held = [await open(server.port), await open(server.port), await open(server.port)];
    const extra = await open(server.port);
    await vi.waitFor(async () => expect(await (() => extra.closed())(), 'the extra connection closed').toBe(true), { timeout: 5000 });
    expect(extra.received()).toBe('');
    held[0]!.socket.destroy();
    await vi.waitFor(async () => expect(await (async () => (await post(server.url, fresh()).catch(() => null))?.status === 200)(), 'served again').toBe(true), { timeout: 5000 });
  });

  it('closes a connection whose headers do not arrive within HEADERS_TIMEOUT_MS', async () => {
    const { server } = await serve({ HEADERS_TIMEOUT_MS: '300' });
    const trickler = await open(server.port);
    trickler.socket.write('POST /webhooks HTTP/1.1\r\nhost: x\r\n');
    await vi.waitFor(async () => expect(await (() => trickler.closed())(), 'the trickler closed').toBe(true), { timeout: 10_000 });
    expect((await post(server.url, fresh())).status).toBe(200);
  });

  it('closes a request whose body does not arrive within REQUEST_TIMEOUT_MS, storing nothing', async () => {
    const { server, log } = await serve({ REQUEST_TIMEOUT_MS: '500', HEADERS_TIMEOUT_MS: '400' });
    const d = fresh();
    const slow = await open(server.port);
    slow.socket.write(head(d) + Buffer.from(d.body).subarray(0, 5).toString());
    await vi.waitFor(async () => expect(await (() => slow.closed())(), 'the slow request closed').toBe(true), { timeout: 10_000 });
    expect(await server.runtime.store.get(d.eventId)).toBeNull();
    expect(log.records().filter((r) => (r.level as number) >= 50)).toEqual([]);
  });

  it('closes a kept-alive connection idle for KEEP_ALIVE_TIMEOUT_MS', async () => {
    const { server } = await serve({ KEEP_ALIVE_TIMEOUT_MS: '200' });
    const d = fresh();
    const conn = await open(server.port);
    conn.socket.write(head(d) + Buffer.from(d.body).toString());
    await vi.waitFor(async () => expect(await (() => conn.received().includes('"received":true'))(), 'answered').toBe(true), { timeout: 5000 });
    await vi.waitFor(async () => expect(await (() => conn.closed())(), 'the idle connection closed').toBe(true), { timeout: 2500 });
  });

  it('answers 503 + Retry-After beyond MAX_INFLIGHT_BODY_BYTES, and serves again once bodies are read', async () => {
    const { server, log } = await serve({ MAX_INFLIGHT_BODY_BYTES: '4096', MAX_BODY_BYTES: '4096' });
    const big = () => fresh(JSON.stringify({ pad: 'p'.repeat(3000) }));
    const first = big();
    const holder = await open(server.port);
    holder.socket.write(head(first) + Buffer.from(first.body).subarray(0, 2900).toString());
    await vi.waitFor(() => expect(server.runtime.bodyBytesInFlight(), 'the first body being read').toBe(2900), { timeout: 5000 });
    const second = big();
    const refused = await open(server.port);
    refused.socket.write(head(second) + Buffer.from(second.body).subarray(0, 2000).toString());
    await vi.waitFor(async () => expect(await (() => refused.received().includes('\r\n\r\n'))(), 'the second request answered').toBe(true), { timeout: 5000 });
    expect(refused.received()).toMatch(/^HTTP\/1\.1 503 /);
    expect(refused.received()).toMatch(/retry-after: \d+/i);
    // The first finishes its body: it is stored, and the budget is free again.
    holder.socket.write(Buffer.from(first.body).subarray(2900));
    await vi.waitFor(async () => expect(await (() => holder.received().includes('"received":true'))(), 'the first answered').toBe(true), { timeout: 5000 });
    expect((await post(server.url, big())).status).toBe(200);
    expect(log.records().filter((r) => (r.level as number) >= 50)).toEqual([]);
  });

  it.each([
    ['a stale signature', { 'x-svc-signature': `t=${Math.floor(Date.now() / 1000) - 3600},v1=${'a'.repeat(64)}` }, 401],
    ['no signature', { 'x-svc-signature': '' }, 400],
    ['a malformed event id', { 'x-svc-event-id': 'nope' }, 400],
    ['a declared length over the cap', { 'content-length': '999999' }, 413],
  ])('answers %s without reading the body, and closes the connection', async (_name, extra, status) => {
    const { server } = await serve({ MAX_BODY_BYTES: '4096' });
    const d = fresh();
    const conn = await open(server.port);
    conn.socket.write(head(d, extra, 2000)); // headers only: the body never comes
    await vi.waitFor(async () => expect(await (() => conn.received().includes('\r\n\r\n'))(), 'answered').toBe(true), { timeout: 5000 });
    expect(conn.received()).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
    expect(conn.received()).toMatch(/connection: close/i);
    await vi.waitFor(async () => expect(await (() => conn.closed())(), 'closed').toBe(true), { timeout: 5000 });
  });
});

/** Resolves at the first of these events (an 'error' is left to the socket's own listener). */
function nextOf(socket: Socket, events: string[]) {
  return new Promise<void>((resolve) => {
    const done = () => {
      for (const e of events) socket.off(e, done);
      resolve();
    };
    for (const e of events) socket.once(e, done);
  });
}

/**
 * Streams a chunked body of up to `total` bytes to `path`, stopping once the server answers or
 * hangs up: how many bytes the client got to write is a ceiling on what the server read.
 */
async function streamBody(port: number, path: string, total: number, headers: Record<string, string>) {
  const conn = await open(port);
  const lines = Object.entries({ host: 'x', 'transfer-encoding': 'chunked', ...headers }).map(([k, v]) => `${k}: ${v}`);
  conn.socket.write(`POST ${path} HTTP/1.1\r\n${lines.join('\r\n')}\r\n\r\n`);
  const chunk = Buffer.alloc(64 * 1024, 0x61);
  let written = 0;
  while (written < total && !conn.closed() && conn.received() === '') {
    const flowing = conn.socket.write(Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')]));
    written += chunk.length;
    if (!flowing) await nextOf(conn.socket, ['drain', 'close', 'data']);
  }
  if (written >= total && !conn.closed()) conn.socket.write('0\r\n\r\n');
  await vi.waitFor(() => expect(conn.received(), 'answered').toMatch(/^HTTP\/1\.1 \d+ [^]*\r\n\r\n/), { timeout: 30_000 });
  return { status: Number(/^HTTP\/1\.1 (\d+)/.exec(conn.received())![1]), written, received: conn.received() };
}

describe("the bodies of podhook's own routes", () => {
  const ADMIN_TOKEN = 'adm_0123456789abcdef0123456789abcdef';

  it('refuses a 64 MiB login form with 413 after its first few KiB, before any credential is checked', async () => {
    const { server, log } = await serve({ ADMIN_TOKEN });
    const total = 64 * 1024 * 1024;
    const sent = await streamBody(server.port, '/_podhook/login', total, { host: new URL(server.url).host, 'content-type': 'application/x-www-form-urlencoded', origin: server.url });
    expect(sent.status).toBe(413);
    expect(sent.received).toMatch(/connection: close/i);
    // The socket buffers on loopback hold a few MiB at most: the rest was never sent, let alone read.
    expect(sent.written).toBeLessThan(16 * 1024 * 1024);
    expect(log.records().filter((r) => (r.level as number) >= 50)).toEqual([]);
    // A declared length over the login form's cap is refused before a byte of it is read.
    const declared = await open(server.port);
    declared.socket.write(`POST /_podhook/login HTTP/1.1\r\nhost: ${new URL(server.url).host}\r\ncontent-type: application/x-www-form-urlencoded\r\ncontent-length: 209715200\r\norigin: ${server.url}\r\n\r\n`);
    await vi.waitFor(() => expect(declared.received()).toMatch(/^HTTP\/1\.1 413 [^]*\r\n\r\n/), { timeout: 5000 });
  });

  it('reads the admin API bodies inside MAX_INFLIGHT_BODY_BYTES: beyond it, 503, before any credential is checked', async () => {
    const { server } = await serve({ ADMIN_TOKEN, MAX_INFLIGHT_BODY_BYTES: '1024' });
    const held = await open(server.port);
    held.socket.write(`POST /_podhook/api/replay HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 2000\r\n\r\n`);
    await vi.waitFor(() => expect(held.received()).toMatch(/^HTTP\/1\.1 503 [^]*retry-after: \d+/i), { timeout: 5000 });
    const api = await fetch(`${server.url}/_podhook/api/replay`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ status: 'dead' }),
    });
    expect(api.status).toBe(200);
    expect(await api.json()).toEqual({ replayed: 0 });
    const big = await streamBody(server.port, '/_podhook/api/backfills', 8 * 1024 * 1024, { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' });
    expect([413, 503]).toContain(big.status);
    expect(big.written).toBeLessThan(8 * 1024 * 1024);
  });
});

describe('shutdown stops taking work', () => {
  it('refuses new connections and new requests at once, answers the request being read, then stops', async () => {
    const { server, path, forget } = await serve();
    const d = fresh();
    const reading = await open(server.port);
    reading.socket.write(head(d) + Buffer.from(d.body).subarray(0, 10).toString());
    const idle = await open(server.port);
    const warm = fresh();
    idle.socket.write(head(warm) + Buffer.from(warm.body).toString());
    await vi.waitFor(async () => expect(await (() => idle.received().includes('"received":true'))(), 'the kept-alive answer').toBe(true), { timeout: 5000 });
    await vi.waitFor(() => expect(server.runtime.bodyBytesInFlight(), 'the request being read holds its 10 bytes').toBe(10), { timeout: 5000 });

    const stopped = server.close(2000);
    forget();
    await vi.waitFor(async () => expect(await (() => idle.closed())(), 'the idle kept-alive connection closed').toBe(true), { timeout: 5000 });
    const refused = await new Promise<string>((resolve) => {
      const s = connect(server.port, '127.0.0.1');
      s.on('connect', () => {
        s.destroy();
        resolve('connected');
      });
      s.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error'));
    });
    expect(refused).toBe('ECONNREFUSED');

    reading.socket.write(Buffer.from(d.body).subarray(10));
    await vi.waitFor(async () => expect(await (() => reading.received().includes('"received":true'))(), 'the request being read answered').toBe(true), { timeout: 5000 });
    expect(reading.received()).toMatch(/connection: close/i);
    await vi.waitFor(async () => expect(await (() => reading.closed())(), 'closed after its answer').toBe(true), { timeout: 5000 });
    await stopped;
    const { store, close } = openSqliteStore(path);
    expect(await store.get(d.eventId)).toMatchObject({ status: 'queued' });
    close();
  });
});
