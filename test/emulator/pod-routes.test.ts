import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createPodsClient } from '../../src/core/pods/pods-client.js';
import { PodsError } from '../../src/core/pods/pods-error.js';
import { startEmulator, type RunningEmulator, type StartEmulatorOptions } from '../../src/emulator/start-emulator.js';
import { KEY_SECRET_NOTE } from '../../src/emulator/pod-routes.js';
import { mac } from '../helpers/sign.js';

const KEY = 'svc_test_key_0123456789';
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function emulator(options: Partial<StartEmulatorOptions> = {}): Promise<RunningEmulator> {
  const r = await startEmulator({ apiKey: KEY, allowLocalUrls: true, ...options });
  cleanups.push(() => r.close());
  return r;
}

const api = (emu: RunningEmulator, path: string, init: RequestInit = {}) =>
  fetch(`${emu.url}${path}`, { ...init, headers: { 'x-api-key': KEY, ...(init.headers as Record<string, string>) } });
const errorOf = async (res: Response) => ((await res.json()) as { error: { code: string; message: string; details?: Record<string, unknown> } }).error;

describe('the emulator’s pod routes', () => {
  it('lists pods newest first in pages whose cursor is compound over created_at and id: ties neither repeat nor skip', async () => {
    const emu = await emulator({ seedPods: 3 });
    const at = '2026-01-01T00:00:00.000Z';
    for (let i = 0; i < 6; i++) emu.emulator.pods.add({ created_at: at, external_ref: i % 2 === 0 ? 'even' : 'odd' });
    const client = createPodsClient({ baseUrl: emu.url, apiKey: KEY });
    const walked: string[] = [];
    let pages = 0;
    for await (const page of client.pages({ pageSize: 2 })) {
      pages++;
      walked.push(...page.pods.map((p) => p.id));
      expect(page.pods.every((p) => p.endpoint.base_url === `${emu.url}/pods/${p.id}/v1`)).toBe(true);
    }
    expect(pages).toBe(5);
    expect(walked).toEqual(emu.emulator.pods.all().map((p) => p.id));
    expect(new Set(walked).size).toBe(9);
    // The six tied pods come oldest-last by id, descending.
    const tied = emu.emulator.pods.all().filter((p) => p.created_at === at).map((p) => p.id);
    expect(tied).toEqual([...tied].sort().reverse());
    // The seeded pods: newest first, the two oldest sharing a created_at.
    const seeded = emu.emulator.pods.all().filter((p) => p.created_at !== at);
    expect(seeded[1]!.created_at).toBe(seeded[2]!.created_at);
    expect(Date.parse(seeded[0]!.created_at)).toBeGreaterThan(Date.parse(seeded[1]!.created_at));

    // The filter is applied in the query, so its pages are whole too.
    const even: string[] = [];
    for await (const page of client.pages({ pageSize: 1, externalRef: 'even' })) even.push(...page.pods.map((p) => p.external_ref));
    expect(even).toEqual(['even', 'even', 'even']);
    const last = await client.list({ pageSize: 100 });
    expect(last.next_cursor).toBeNull();
  });

  it('refuses a page size outside 1 to 100 and a cursor it did not give out, with invalid_request', async () => {
    const emu = await emulator({ seedPods: 1 });
    for (const q of ['limit=0', 'limit=101', 'limit=ten', 'cursor=bm90LWEtY3Vyc29y']) {
      const res = await api(emu, `/pods/v1/pods?${q}`);
      expect(res.status, q).toBe(400);
      expect((await errorOf(res)).code).toBe('invalid_request');
    }
  });

  it('queues an action (202), emits a signed pod.action.queued to the webhook, and writes diagnose’s last_result after the delay', async () => {
    const emu = await emulator({ seedPods: 1, resultDelayMs: 300 });
    const received: { headers: IncomingHttpHeaders; body: Buffer }[] = [];
    const receiver = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        received.push({ headers: req.headers, body: Buffer.concat(chunks) });
        res.writeHead(200).end();
      });
    });
    receiver.listen(0, '127.0.0.1');
    await once(receiver, 'listening');
    cleanups.push(() => new Promise<void>((r) => receiver.close(() => r())));
    const hook = await api(emu, '/pods/v1/webhooks', {
      method: 'POST',
      body: JSON.stringify({ url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/webhooks`, event_types: ['pod.action.queued'] }),
    });
    const { webhook } = (await hook.json()) as { webhook: { secret: string } };

    const pod = emu.emulator.pods.all()[0]!;
    const client = createPodsClient({ baseUrl: emu.url, apiKey: KEY });
    const queued = await client.queueAction(pod.id, 'diagnose', { requestId: 'step-diagnose-0001' });
    expect(queued).toMatchObject({ queued: 'diagnose', result_available: true, poll: `/pods/v1/pods/${pod.id}/actions` });
    expect(await client.lastResult(pod.id)).toBeNull();

    await vi.waitFor(() => expect(received).toHaveLength(1), { timeout: 5_000 });
    const [delivery] = received;
    expect(delivery!.headers['x-svc-event-type']).toBe('pod.action.queued');
    const [, t, v1] = /^t=(\d+),v1=([0-9a-f]+)$/.exec(String(delivery!.headers['x-svc-signature']))!;
    expect(v1).toBe(mac(webhook.secret, t!, delivery!.body));
    expect(JSON.parse(delivery!.body.toString())).toMatchObject({ pod: { id: pod.id }, action: { queued: 'diagnose', result_available: true } });

    await vi.waitFor(async () => expect(await client.lastResult(pod.id)).toMatchObject({ action: 'diagnose', output: expect.stringContaining(pod.id) }), { timeout: 5_000 });
    const poll = (await client.actions(pod.id)) as { actions: { action: string; result_at: string | null }[] };
    expect(poll.actions).toEqual([expect.objectContaining({ action: 'diagnose', result_at: expect.any(String) })]);
    expect(emu.emulator.queuedActions()).toEqual([expect.objectContaining({ pod_id: pod.id, action: 'diagnose', request_id: 'step-diagnose-0001' })]);
    // restart has no output: none is ever written for it.
    expect(await client.queueAction(pod.id, 'restart')).toMatchObject({ queued: 'restart', result_available: false });
  });

  it('refuses an action body without one of the six actions, and a pod it does not have', async () => {
    const emu = await emulator({ seedPods: 1 });
    const pod = emu.emulator.pods.all()[0]!;
    const bad = await api(emu, `/pods/v1/pods/${pod.id}/actions`, { method: 'POST', body: JSON.stringify({ action: 'reboot' }) });
    expect(bad.status).toBe(400);
    expect(await errorOf(bad)).toMatchObject({ code: 'invalid_request', details: { field: 'action' } });
    const missing = await api(emu, `/pods/v1/pods/${crypto.randomUUID()}/actions`, { method: 'POST', body: JSON.stringify({ action: 'restart' }) });
    expect(missing.status).toBe(404);
    expect((await errorOf(missing)).code).toBe('not_found');
    emu.emulator.pods.remove(pod.id);
    expect((await api(emu, `/pods/v1/pods/${pod.id}/chat-ticket`, { method: 'POST' })).status).toBe(404);
    expect(emu.emulator.queuedActions()).toEqual([]);
  });

  it('mints a key whose secret is shown once, refuses a name over 60 characters, and keeps key mints to their own bucket', async () => {
    const emu = await emulator({ seedPods: 1, keyMintLimit: 2, keyMintWindowMs: 60_000 });
    const pod = emu.emulator.pods.all()[0]!;
    const client = createPodsClient({ baseUrl: emu.url, apiKey: KEY, maxWaitMs: 0 });
    const minted = await client.mintKey(pod.id, { name: 'ci' });
    expect(minted.key).toMatchObject({ name: 'ci', secret_note: KEY_SECRET_NOTE, daily_request_cap: expect.any(Number) });
    expect(minted.key.secret.startsWith(minted.key.prefix)).toBe(true);
    expect(minted.key.secret.endsWith(minted.key.last4)).toBe(true);
    expect(minted.endpoint).toEqual({ base_url: `${emu.url}/pods/${pod.id}/v1`, model: 'agent-pod' });
    expect((await client.mintKey(pod.id)).key.name).toBe('API key');
    const long = await api(emu, `/pods/v1/pods/${pod.id}/keys`, { method: 'POST', body: JSON.stringify({ name: 'x'.repeat(61) }) });
    expect(long.status).toBe(429); // the third mint of the hour, before its body is read
    const refused = (await client.mintKey(pod.id).catch((e: unknown) => e)) as PodsError;
    expect(refused).toMatchObject({ code: 'rate_limited', status: 429 });
    expect(emu.emulator.bucketCounts()).toEqual({ writes: { allowed: 0, refused: 0 }, reads: { allowed: 0, refused: 0 }, key_mints: { allowed: 2, refused: 2 } });
    // Writes were not touched by the mints.
    expect((await client.chatTicket(pod.id)).scope).toBe('chat');
  });

  it('refuses a key name over 60 characters with invalid_request', async () => {
    const emu = await emulator({ seedPods: 1 });
    const pod = emu.emulator.pods.all()[0]!;
    const long = await api(emu, `/pods/v1/pods/${pod.id}/keys`, { method: 'POST', body: JSON.stringify({ name: 'é'.repeat(61) }) });
    expect(long.status).toBe(400);
    expect(await errorOf(long)).toMatchObject({ code: 'invalid_request', details: { field: 'name', max_length: 60 } });
    expect((await api(emu, `/pods/v1/pods/${pod.id}/keys`, { method: 'POST', body: JSON.stringify({ name: 'é'.repeat(60) }) })).status).toBe(201);
  });

  it('gives a chat ticket whose websocket_url carries it, and answers 429 with retry_after_seconds once the write bucket is spent', async () => {
    const emu = await emulator({ seedPods: 1, writeLimit: 1, writeWindowMs: 30_000 });
    const pod = emu.emulator.pods.all()[0]!;
    const ok = await api(emu, `/pods/v1/pods/${pod.id}/chat-ticket`, { method: 'POST' });
    expect(ok.status).toBe(200);
    const { chat } = (await ok.json()) as { chat: { ticket: string; websocket_url: string; scope: string; expires_in_seconds: number; shared_session: string } };
    expect(chat).toMatchObject({ scope: 'chat', expires_in_seconds: 60, shared_session: expect.any(String) });
    expect(new URL(chat.websocket_url).searchParams.get('ticket')).toBe(chat.ticket);
    const limited = await api(emu, `/pods/v1/pods/${pod.id}/actions`, { method: 'POST', body: JSON.stringify({ action: 'stop' }) });
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('30');
    expect(await errorOf(limited)).toEqual({ code: 'rate_limited', message: 'Too many requests.', details: { retry_after_seconds: 30 } });
    // Reads have their own bucket.
    expect((await api(emu, '/pods/v1/pods')).status).toBe(200);
  });

  it('adds and removes pods for tests through /_emulator/pods', async () => {
    const emu = await emulator();
    const id = crypto.randomUUID();
    const added = await fetch(`${emu.url}/_emulator/pods`, { method: 'POST', body: JSON.stringify({ id, external_ref: 'mine' }) });
    expect(added.status).toBe(201);
    expect(((await (await api(emu, '/pods/v1/pods?external_ref=mine')).json()) as { pods: { id: string }[] }).pods.map((p) => p.id)).toEqual([id]);
    expect((await fetch(`${emu.url}/_emulator/pods`, { method: 'POST', body: JSON.stringify({ id }) })).status).toBe(400);
    expect((await fetch(`${emu.url}/_emulator/pods`, { method: 'POST', body: JSON.stringify({ created_at: 'yesterday' }) })).status).toBe(400);
    expect((await fetch(`${emu.url}/_emulator/pods/${id}`, { method: 'DELETE' })).status).toBe(204);
    expect((await fetch(`${emu.url}/_emulator/pods/${id}`, { method: 'DELETE' })).status).toBe(404);
    expect(((await (await api(emu, '/pods/v1/pods')).json()) as { pods: unknown[] }).pods).toEqual([]);
  });
});
