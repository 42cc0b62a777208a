import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { handlers } from '../fixtures/recording-handlers.js';
import { EVENT_TYPES } from '../../src/core/events/event-types.js';
import type { DeliveryRecord } from '../../src/emulator/delivery-scheduler.js';
import { SENDER_RETRY_MINUTES } from '../../src/core/ingest/sender-retry-ladder.js';
import { startEmulator, type RunningEmulator, type StartEmulatorOptions } from '../../src/emulator/start-emulator.js';
import { parseConfig } from '../../src/core/config.js';
import { startServer, type RunningServer } from '../../src/node/serve.js';
import { runMain } from '../cli/run-main.js';
import { captureLogger } from '../helpers/capture-logger.js';
import { mac } from '../helpers/sign.js';
import { dbIn, useTempDir } from '../helpers/temp-dir.js';

const KEY = 'svc_test_key_0123456789';
const tempDir = useTempDir();
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function emulator(options: Partial<StartEmulatorOptions> = {}): Promise<RunningEmulator> {
  const r = await startEmulator({ apiKey: KEY, allowLocalUrls: true, ...options });
  cleanups.push(() => r.close());
  return r;
}

async function createWebhook(emu: RunningEmulator, url: string, eventTypes?: string[]) {
  const res = await fetch(`${emu.url}/pods/v1/webhooks`, {
    method: 'POST',
    headers: { 'x-api-key': KEY },
    body: JSON.stringify({ url, ...(eventTypes && { event_types: eventTypes }) }),
  });
  expect(res.status).toBe(201);
  return ((await res.json()) as { webhook: { id: string; secret: string } }).webhook;
}

/** A port nothing listens on (yet): the receiver is down. */
async function freePort(): Promise<number> {
  const probe = createServer();
  probe.listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const { port } = probe.address() as AddressInfo;
  await new Promise((r) => probe.close(r));
  return port;
}

interface Captured {
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** A receiver that records every request and answers with the next status of `statuses` (then 200). */
async function captureServer(statuses: number[]) {
  const requests: Captured[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      requests.push({ headers: req.headers, body: Buffer.concat(chunks) });
      res.writeHead(statuses.shift() ?? 200).end();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  cleanups.push(() => new Promise((r) => server.close(() => r())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`, requests };
}

const deliveries = async (emu: RunningEmulator, query = '') =>
  ((await (await fetch(`${emu.url}/_emulator/deliveries${query}`)).json()) as { deliveries: DeliveryRecord[] }).deliveries;

describe('the emulator delivers events as the service does', () => {
  it('signs t=<unix>,v1=<hmac of "<t>.<body>"> and re-signs each retry with a fresh t, the same id and bytes', async () => {
    // Emulated time runs 10 000× faster than real time, like the schedule, so each retry has a later `t`.
    const start = Date.now();
    const emu = await emulator({ timeScale: 0.0001, clock: () => start + (Date.now() - start) * 10_000 });
    const target = await captureServer([500, 503]);
    const webhook = await createWebhook(emu, target.url);
    const emitted = await fetch(`${emu.url}/_emulator/events`, {
      method: 'POST',
      body: JSON.stringify({ type: 'pod.backup.failed', data: { pod: { id: 'p1' }, note: 'é ✓' } }),
    });
    expect(emitted.status).toBe(202);
    const { event } = (await emitted.json()) as { event: { id: string; webhook_ids: string[] } };
    expect(event.webhook_ids).toEqual([webhook.id]);
    await vi.waitFor(() => expect(target.requests.length === 3, 'three attempts').toBe(true), { timeout: 5000 });

    const ts: number[] = [];
    for (const r of target.requests) {
      const match = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(r.headers['x-svc-signature']));
      expect(match).not.toBeNull();
      ts.push(Number(match![1]));
      expect(match![2]).toBe(mac(webhook.secret, match![1]!, r.body));
      expect(r.headers['x-svc-event-id']).toBe(event.id);
      expect(r.headers['x-svc-event-type']).toBe('pod.backup.failed');
      expect(r.headers['content-type']).toBe('application/json');
      expect(r.body.equals(target.requests[0]!.body)).toBe(true);
    }
    expect(JSON.parse(target.requests[0]!.body.toString('utf8'))).toEqual({ pod: { id: 'p1' }, note: 'é ✓' });
    expect(ts[1]! - ts[0]!).toBeGreaterThanOrEqual(60);
    expect(ts[2]! - ts[1]!).toBeGreaterThanOrEqual(300);

    const [record] = await deliveries(emu, `?event_id=${event.id}`);
    expect(record).toMatchObject({ status: 'delivered', webhook_id: webhook.id });
    expect(record!.attempts.map((a) => a.status)).toEqual([500, 503, 200]);
  });

  it("sends each event only to the webhooks whose event_types take it (omitted: all)", async () => {
    const emu = await emulator();
    const created = await captureServer([]);
    const all = await captureServer([]);
    await createWebhook(emu, created.url, ['pod.created']);
    await createWebhook(emu, all.url);
    for (const type of EVENT_TYPES) emu.emulator.emit({ type });
    await vi.waitFor(() => expect(all.requests.length === 11 && created.requests.length === 1, 'deliveries').toBe(true), { timeout: 5000 });
    expect(created.requests.map((r) => r.headers['x-svc-event-type'])).toEqual(['pod.created']);
    expect(new Set(all.requests.map((r) => r.headers['x-svc-event-type']))).toEqual(new Set(EVENT_TYPES));
  });

  it('delivers every event once a podhook receiver that was down for the first retries is back, and they reach processed', async () => {
    const db = dbIn(tempDir());
    const port = await freePort();
    const emu = await emulator({ timeScale: 0.0001 }); // retries after 6, 30, 90, 360, 1080 … ms
    // Registered with the CLI into the receiver's database; the receiver has no SVC_WEBHOOK_SECRET.
    const registered = await runMain(['register', '--allow-local-url', '--url', `http://127.0.0.1:${port}/webhooks`], {
      SVC_API_KEY: KEY,
      SVC_BASE_URL: emu.url,
      DATABASE_PATH: db,
    });
    expect(registered.code).toBe(0);
    const ids = ['pod.created', 'pod.active', 'pod.backup.completed'].map((type) => emu.emulator.emit({ type: type as 'pod.created' }).id);
    await vi.waitFor(() => expect(emu.emulator.deliveries().every((d) => d.attempts.length >= 3), 'three failed attempts each').toBe(true), { timeout: 5000 });
    expect(emu.emulator.deliveries().flatMap((d) => d.attempts).every((a) => a.status === null && a.error === 'ECONNREFUSED')).toBe(true);

    const log = captureLogger();
    const server: RunningServer = await startServer({
      config: parseConfig({ DATABASE_PATH: db, PORT: String(port), HOST: '127.0.0.1' }),
      logger: log.logger,
      handlers,
    });
    cleanups.push(() => server.close(100));
    await vi.waitFor(() => expect(emu.emulator.deliveries().every((d) => d.status === 'delivered'), 'all delivered').toBe(true), { timeout: 10_000 });
    await vi.waitFor(async () => {
      const rows = await Promise.all(ids.map((id) => server.runtime.store.get(id)));
      expect(rows.every((r) => r?.status === 'processed'), 'all processed').toBe(true);
    }, { timeout: 5000 });
    for (const d of emu.emulator.deliveries()) {
      expect(d.attempts.at(-1)!.status).toBe(200);
      expect(d.attempts.length).toBeGreaterThan(3);
    }
    const webhook = emu.emulator.webhooks()[0]!;
    expect(webhook).toMatchObject({ failure_count: 0, disabled_by_us_at: null, last_error: 'ECONNREFUSED' });
    expect(webhook.last_delivery_at).not.toBeNull();
  });

  it('gives up after the seventh retry on the spec schedule, sets disabled_by_us_at and sends nothing more', async () => {
    const port = await freePort();
    const scale = 0.00005; // the whole schedule (1341 minutes) in about 4 s
    const emu = await emulator({ timeScale: scale });
    const webhook = await createWebhook(emu, `http://127.0.0.1:${port}/webhooks`);
    const first = emu.emulator.emit({ type: 'pod.expiring' });
    // A second event once the first has had six retries: its own schedule would end that much
    // (about 1.9 s here) after the first's, so its retries are still pending when the first gives up.
    await vi.waitFor(() => expect(emu.emulator.deliveries().find((d) => d.event_id === first.id)!.attempts.length, 'six retries of the first').toBe(7), { timeout: 10_000 });
    const second = emu.emulator.emit({ type: 'pod.renewed' });
    await vi.waitFor(async () => expect((await deliveries(emu, `?event_id=${first.id}`))[0]?.status === 'gave_up', 'gave up').toBe(true), { timeout: 15_000 });
    await vi.waitFor(async () => expect((await deliveries(emu, `?event_id=${second.id}`))[0]?.status !== 'pending', 'second settled').toBe(true), { timeout: 2000 });

    const [gaveUp] = await deliveries(emu, `?event_id=${first.id}`);
    expect(gaveUp!.attempts).toHaveLength(1 + SENDER_RETRY_MINUTES.length);
    const sent = gaveUp!.attempts.map((a) => Date.parse(a.sent_at));
    SENDER_RETRY_MINUTES.forEach((minutes, i) => {
      expect(sent[i + 1]! - sent[i]!).toBeGreaterThanOrEqual(Math.floor(minutes * 60_000 * scale) - 2);
    });
    // The other event's retries stop with it: the webhook is disabled, not the delivery.
    expect((await deliveries(emu, `?event_id=${second.id}`))[0]).toMatchObject({ status: 'cancelled', next_attempt_at: null });

    const { webhooks } = (await (await fetch(`${emu.url}/_emulator/webhooks`)).json()) as { webhooks: Record<string, unknown>[] };
    expect(webhooks[0]).toMatchObject({ id: webhook.id, enabled: true, last_error: 'ECONNREFUSED', last_delivery_at: null });
    // Failed attempts since the last success, across both events.
    expect(webhooks[0]!.failure_count).toBeGreaterThanOrEqual(8);
    expect(Date.parse(webhooks[0]!.disabled_by_us_at as string)).toBeGreaterThan(0);

    // The next event goes to a webhook still enabled and not to the disabled one: once the
    // enabled one has it, the emulator has sent that event wherever it was going to.
    const live = await captureServer([]);
    const liveHook = await createWebhook(emu, live.url);
    const after = emu.emulator.emit({ type: 'pod.created' });
    expect(after.webhook_ids).toEqual([liveHook.id]);
    await vi.waitFor(() => expect(live.requests.length, 'delivered to the enabled webhook').toBe(1), { timeout: 5000 });
    expect((await deliveries(emu, `?event_id=${after.id}`)).map((d) => d.webhook_id)).toEqual([liveHook.id]);
    expect(emu.emulator.webhooks().find((w) => w.id === webhook.id)!.failure_count).toBe(webhooks[0]!.failure_count);
  });
});
