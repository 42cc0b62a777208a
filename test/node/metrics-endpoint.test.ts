import { randomUUID } from 'node:crypto';
import { connect } from 'node:net';
import { describe, expect, it, vi } from 'vitest';
import { openNodeTarget } from '../helpers/node-target.js';
import { FIXED_NOW_MS, signDelivery, TEST_SECRET, toRequest } from '../helpers/sign.js';
import { useNodeServers } from '../helpers/serve-node.js';
import { useTempDir } from '../helpers/temp-dir.js';

const tempDir = useTempDir();
const serve = useNodeServers(tempDir);

const scrape = async (t: { fetch(r: Request): Promise<Response> }) => (await t.fetch(new Request('http://podhook.test/metrics'))).text();

describe('GET /metrics', () => {
  it('serves the queue gauges from memory, refreshed from the store at most every 15 s', async () => {
    const target = openNodeTarget(tempDir(), { secrets: [TEST_SECRET] });
    target.setNow(FIXED_NOW_MS);
    expect(await scrape(target)).toContain('podhook_dead_letters 0');
    await target.fetch(toRequest(signDelivery({ body: '' }))); // stored dead at once
    target.setNow(FIXED_NOW_MS + 14_999);
    const texts = await Promise.all(Array.from({ length: 64 }, () => scrape(target)));
    for (const text of texts) expect(text).toContain('podhook_dead_letters 0');
    target.setNow(FIXED_NOW_MS + 15_000);
    expect(await scrape(target)).toContain('podhook_dead_letters 1');
    await target.close();
  });

  it('counts quarantined deliveries', async () => {
    const target = openNodeTarget(tempDir(), { secrets: [TEST_SECRET] });
    target.setNow(FIXED_NOW_MS);
    const d = signDelivery();
    await target.fetch(toRequest(d));
    await target.fetch(toRequest({ ...d, headers: { ...d.headers, 'x-svc-event-id': randomUUID() } }));
    expect(await scrape(target)).toContain('podhook_deliveries_total{event_type="pod.created",outcome="quarantined"} 1');
    await target.close();
  });

  it('asks for METRICS_TOKEN as a bearer token when it is set', async () => {
    const { server, log } = await serve({ METRICS_TOKEN: 'metrics-token-5e1f' });
    expect((await fetch(`${server.url}/metrics`)).status).toBe(401);
    expect((await fetch(`${server.url}/metrics`, { headers: { authorization: 'Bearer wrong-token-000000' } })).status).toBe(401);
    expect((await fetch(`${server.url}/metrics`, { headers: { authorization: 'metrics-token-5e1f' } })).status).toBe(401);
    const ok = await fetch(`${server.url}/metrics`, { headers: { authorization: 'Bearer metrics-token-5e1f' } });
    expect(ok.status).toBe(200);
    expect(await ok.text()).toContain('podhook_dead_letters');
    expect(log.text()).not.toContain('metrics-token-5e1f');
  });

  it('is open when METRICS_TOKEN is not set', async () => {
    const { server } = await serve();
    expect((await fetch(`${server.url}/metrics`)).status).toBe(200);
  });
});

/** Whether a new connection gets GET /healthz answered: under MAX_CONNECTIONS=1, only once no other is open. */
function servedAlone(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let answer = '';
    socket.on('data', (c) => (answer += c));
    socket.on('error', () => undefined);
    socket.on('close', () => resolve(answer.startsWith('HTTP/1.1 200 ')));
    socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
  });
}

describe('unauthenticated clients cannot produce error-level log lines', () => {
  it('a sender hanging up mid-body on a path Hono answers is logged at info', async () => {
    // One connection at a time: a new one is served only once the server has closed the one before.
    const { server, log } = await serve({ MAX_CONNECTIONS: '1' });
    const send = (path: string) => {
      const socket = connect(server.port, '127.0.0.1');
      let answer = '';
      socket.on('data', (c) => (answer += c));
      socket.on('error', () => undefined);
      // Headers that pass every check made before the body, so the body is being read.
      const signed = Object.entries(signDelivery({ t: Math.floor(Date.now() / 1000) }).headers).map(([k, v]) => `${k}: ${v}\r\n`).join('');
      socket.write(`POST ${server.url}${path} HTTP/1.1\r\nHost: x\r\n${signed}Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"a":`);
      return { socket, answer: () => answer };
    };

    const ingest = send('/webhooks');
    await vi.waitFor(() => expect(server.runtime.bodyBytesInFlight(), 'the body being read').toBe(5), { timeout: 5000 });
    ingest.socket.destroy();
    await vi.waitFor(() => expect(log.records().some((r) => r.reason === 'body_incomplete'), 'the cut-off logged').toBe(true), { timeout: 5000 });

    const unknown = send('/webhooks/'); // Hono answers 404 without reading the body
    await vi.waitFor(() => expect(unknown.answer(), 'answered').toMatch(/^HTTP\/1\.1 404 /), { timeout: 5000 });
    unknown.socket.destroy();
    await vi.waitFor(async () => expect(await servedAlone(server.port), 'a later connection served: the hang-up was handled').toBe(true), { timeout: 5000 });

    expect(log.records().filter((r) => (r.level as number) >= 50)).toEqual([]);
  });
});
