import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../src/node/sqlite-store.js';
import { useNodeServers } from '../helpers/serve-node.js';
import { signDelivery, type SignedDelivery } from '../helpers/sign.js';
import { useTempDir } from '../helpers/temp-dir.js';
import { waitFor } from '../helpers/wait-for.js';

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
    await waitFor(() => extra.closed(), 5000, 'the extra connection closed');
    expect(extra.received()).toBe('');
    held[0]!.socket.destroy();
    await waitFor(async () => (await post(server.url, fresh()).catch(() => null))?.status === 200, 5000, 'served again');
  });

  it('closes a connection whose headers do not arrive within HEADERS_TIMEOUT_MS', async () => {
    const { server } = await serve({ HEADERS_TIMEOUT_MS: '300' });
    const trickler = await open(server.port);
    trickler.socket.write('POST /webhooks HTTP/1.1\r\nhost: x\r\n');
    await waitFor(() => trickler.closed(), 10_000, 'the trickler closed');
    expect((await post(server.url, fresh())).status).toBe(200);
  });

  it('closes a request whose body does not arrive within REQUEST_TIMEOUT_MS, storing nothing', async () => {
    const { server, log } = await serve({ REQUEST_TIMEOUT_MS: '500', HEADERS_TIMEOUT_MS: '400' });
    const d = fresh();
    const slow = await open(server.port);
    slow.socket.write(head(d) + Buffer.from(d.body).subarray(0, 5).toString());
    await waitFor(() => slow.closed(), 10_000, 'the slow request closed');
    expect(await server.runtime.store.get(d.eventId)).toBeNull();
    expect(log.records().filter((r) => (r.level as number) >= 50)).toEqual([]);
  });

  it('closes a kept-alive connection idle for KEEP_ALIVE_TIMEOUT_MS', async () => {
    const { server } = await serve({ KEEP_ALIVE_TIMEOUT_MS: '200' });
    const d = fresh();
    const conn = await open(server.port);
    conn.socket.write(head(d) + Buffer.from(d.body).toString());
    await waitFor(() => conn.received().includes('"received":true'), 5000, 'answered');
    await waitFor(() => conn.closed(), 2500, 'the idle connection closed');
  });

  it('answers 503 + Retry-After beyond MAX_INFLIGHT_BODY_BYTES, and serves again once bodies are read', async () => {
    const { server, log } = await serve({ MAX_INFLIGHT_BODY_BYTES: '4096', MAX_BODY_BYTES: '4096' });
    const big = () => fresh(JSON.stringify({ pad: 'p'.repeat(3000) }));
    const first = big();
    const holder = await open(server.port);
    holder.socket.write(head(first) + Buffer.from(first.body).subarray(0, 2900).toString());
    await new Promise((r) => setTimeout(r, 100));
    const second = big();
    const refused = await open(server.port);
    refused.socket.write(head(second) + Buffer.from(second.body).subarray(0, 2000).toString());
    await waitFor(() => refused.received().includes('\r\n\r\n'), 5000, 'the second request answered');
    expect(refused.received()).toMatch(/^HTTP\/1\.1 503 /);
    expect(refused.received()).toMatch(/retry-after: \d+/i);
    // The first finishes its body: it is stored, and the budget is free again.
    holder.socket.write(Buffer.from(first.body).subarray(2900));
    await waitFor(() => holder.received().includes('"received":true'), 5000, 'the first answered');
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
    await waitFor(() => conn.received().includes('\r\n\r\n'), 5000, 'answered');
    expect(conn.received()).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
    expect(conn.received()).toMatch(/connection: close/i);
    await waitFor(() => conn.closed(), 5000, 'closed');
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
    await waitFor(() => idle.received().includes('"received":true'), 5000, 'the kept-alive answer');
    await new Promise((r) => setTimeout(r, 50));

    const stopped = server.close(2000);
    forget();
    await waitFor(() => idle.closed(), 5000, 'the idle kept-alive connection closed');
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
    await waitFor(() => reading.received().includes('"received":true'), 5000, 'the request being read answered');
    expect(reading.received()).toMatch(/connection: close/i);
    await waitFor(() => reading.closed(), 5000, 'closed after its answer');
    await stopped;
    const { store, close } = openSqliteStore(path);
    expect(await store.get(d.eventId)).toMatchObject({ status: 'queued' });
    close();
  });
});
