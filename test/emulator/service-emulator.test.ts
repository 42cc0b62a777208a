import { afterEach, describe, expect, it } from 'vitest';
import { REQUEST_ID_PATTERN } from '../../src/http/request-id.js';
import { SECRET_NOTE } from '../../src/emulator/create-service-emulator.js';
import { startEmulator, type RunningEmulator, type StartEmulatorOptions } from '../../src/emulator/start-emulator.js';

const KEY = 'svc_test_key_0123456789';
const running: RunningEmulator[] = [];
afterEach(async () => {
  for (const r of running.splice(0)) await r.close();
});

async function emulator(options: Partial<StartEmulatorOptions> = {}) {
  const r = await startEmulator({ apiKey: KEY, ...options });
  running.push(r);
  return r;
}

function create(base: string, body: unknown, headers: Record<string, string> = {}) {
  return fetch(`${base}/pods/v1/webhooks`, {
    method: 'POST',
    headers: { 'x-api-key': KEY, 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

describe('the service emulator: POST /pods/v1/webhooks as the spec describes', () => {
  it('creates a webhook and shows its secret once, with secret_note', async () => {
    const emu = await emulator();
    const res = await create(emu.url, { url: 'https://hooks.example.com/in', event_types: ['pod.created', 'pod.active'] });
    expect(res.status).toBe(201);
    const { webhook } = (await res.json()) as { webhook: Record<string, unknown> };
    expect(webhook).toMatchObject({
      url: 'https://hooks.example.com/in',
      event_types: ['pod.created', 'pod.active'],
      enabled: true,
      disabled_by_us_at: null,
      failure_count: 0,
      last_error: null,
      last_delivery_at: null,
      secret_note: SECRET_NOTE,
    });
    expect(webhook.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(webhook.secret).toMatch(/^whsec_[0-9a-f]{48}$/);
    const listed = await (await fetch(`${emu.url}/_emulator/webhooks`)).text();
    expect(listed).toContain(webhook.id as string);
    expect(listed).not.toContain(webhook.secret as string);
  });

  it('refuses a missing or wrong X-API-Key with 401 unauthorized in the error shape', async () => {
    const emu = await emulator();
    for (const headers of [{ 'x-api-key': '' }, { 'x-api-key': 'wrong' }, { 'x-api-key': `${KEY}x` }]) {
      const res = await create(emu.url, { url: 'https://hooks.example.com/' }, headers);
      expect(res.status).toBe(401);
      expect(await res.json()).toEqual({ error: { code: 'unauthorized', message: 'Missing or invalid X-API-Key.' } });
    }
    expect(emu.emulator.webhooks()).toEqual([]);
  });

  it('echoes a valid x-request-id and generates one otherwise, on success and failure', async () => {
    const emu = await emulator();
    expect((await create(emu.url, { url: 'https://hooks.example.com/' }, { 'x-request-id': 'req.ABC_123-x' })).headers.get('x-request-id')).toBe('req.ABC_123-x');
    expect((await create(emu.url, {}, { 'x-request-id': 'caller-id-9' })).headers.get('x-request-id')).toBe('caller-id-9');
    for (const offered of ['short', 'has space inside', 'x'.repeat(65)]) {
      const id = (await create(emu.url, {}, { 'x-request-id': offered })).headers.get('x-request-id');
      expect(id).not.toBe(offered);
      expect(id).toMatch(REQUEST_ID_PATTERN);
    }
  });

  it.each([
    ['not JSON', '{"url":', 'body'],
    ['no url', { event_types: ['pod.created'] }, 'url'],
    ['http url', { url: 'http://hooks.example.com/' }, 'url'],
    ['private address', { url: 'https://0xa000001/' }, 'url'],
    ['credentials', { url: 'https://@hooks.example.com/' }, 'url'],
    ['empty event_types', { url: 'https://hooks.example.com/', event_types: [] }, 'event_types'],
    ['unknown event type', { url: 'https://hooks.example.com/', event_types: ['pod.moved'] }, 'event_types'],
  ])('refuses %s with 400 invalid_request and details', async (_name, body, field) => {
    const emu = await emulator();
    const res = await create(emu.url, body);
    expect(res.status).toBe(400);
    const json = (await res.json()) as { error: { code: string; message: string; details: { field: string } } };
    expect(json.error.code).toBe('invalid_request');
    expect(json.error.message.length).toBeGreaterThan(5);
    expect(json.error.details.field).toBe(field);
  });

  it('accepts local target URLs only with allowLocalUrls', async () => {
    const strict = await emulator();
    expect((await create(strict.url, { url: 'http://127.0.0.1:3000/webhooks' })).status).toBe(400);
    const local = await emulator({ allowLocalUrls: true });
    expect((await create(local.url, { url: 'http://127.0.0.1:3000/webhooks' })).status).toBe(201);
  });

  it('allows 10 webhooks per account, then answers limit_exceeded', async () => {
    const emu = await emulator();
    for (let i = 0; i < 10; i++) expect((await create(emu.url, { url: `https://hooks.example.com/${i}` })).status).toBe(201);
    const res = await create(emu.url, { url: 'https://hooks.example.com/11' });
    expect(res.status).toBe(409);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('limit_exceeded');
    expect(emu.emulator.webhooks()).toHaveLength(10);
  });

  it('counts writes in the shared bucket and answers 429 rate_limited with retry_after_seconds until the window ends', async () => {
    let now = 1_790_000_000_000;
    const emu = await emulator({ writeLimit: 3, writeWindowMs: 1000, clock: () => now });
    // A refused body still spends budget: that is why the CLI validates before sending.
    expect((await create(emu.url, { url: 'http://x/' })).status).toBe(400);
    expect((await create(emu.url, { url: 'https://hooks.example.com/1' })).status).toBe(201);
    expect((await create(emu.url, { url: 'https://hooks.example.com/2' })).status).toBe(201);
    const limited = await create(emu.url, { url: 'https://hooks.example.com/3' });
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('1');
    expect(await limited.json()).toEqual({ error: { code: 'rate_limited', message: 'Too many requests.', details: { retry_after_seconds: 1 } } });
    now += 999;
    expect((await create(emu.url, { url: 'https://hooks.example.com/3' })).status).toBe(429);
    now += 1;
    expect((await create(emu.url, { url: 'https://hooks.example.com/3' })).status).toBe(201);
  });

  it('answers injected faults for the next N requests, then behaves again', async () => {
    const emu = await emulator();
    const injected = await fetch(`${emu.url}/_emulator/faults`, { method: 'POST', body: JSON.stringify({ count: 2 }) });
    expect(injected.status).toBe(201);
    for (let i = 0; i < 2; i++) {
      const res = await create(emu.url, { url: 'https://hooks.example.com/' });
      expect(res.status).toBe(500);
      expect(await res.json()).toEqual({ error: { code: 'internal', message: 'Internal error.' } });
    }
    expect((await create(emu.url, { url: 'https://hooks.example.com/' })).status).toBe(201);
    emu.emulator.injectFault({ count: 1, status: 403, code: 'forbidden', message: 'Not for this key.' });
    expect(((await (await create(emu.url, { url: 'https://hooks.example.com/' })).json()) as { error: { code: string } }).error.code).toBe('forbidden');
  });

  it('answers other /pods/v1 routes with not_implemented, unknown routes with not_found', async () => {
    const emu = await emulator();
    const other = await fetch(`${emu.url}/pods/v1/webhooks/some-id`, { headers: { 'x-api-key': KEY } });
    expect(other.status).toBe(501);
    expect(((await other.json()) as { error: { code: string } }).error.code).toBe('not_implemented');
    expect((await fetch(`${emu.url}/nope`)).status).toBe(404);
  });

  it('reads no body past its cap, with or without a key: a declared one over it is refused unread, a streamed one is cut (413)', async () => {
    const emu = await emulator({ maxBodyBytes: 64 * 1024 });
    const declared = await fetch(`${emu.url}/_emulator/events`, { method: 'POST', body: new Uint8Array(65 * 1024) });
    expect(declared.status).toBe(413);
    expect(await declared.json()).toMatchObject({ error: { code: 'payload_too_large', details: { max_bytes: 64 * 1024 } } });
    // 300 MB offered as a stream, pulled only as the emulator reads: it stops at the cap.
    let pulled = 0;
    const chunk = new Uint8Array(64 * 1024).fill(0x20);
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (pulled >= 300 * 1024 * 1024) return controller.close();
        pulled += chunk.byteLength;
        controller.enqueue(chunk);
      },
    });
    const streamed = await fetch(`${emu.url}/_emulator/events`, { method: 'POST', body, duplex: 'half' } as RequestInit).catch(() => null);
    if (streamed) expect(streamed.status).toBe(413);
    expect(pulled).toBeLessThan(32 * 1024 * 1024);
    // The gated routes too, before the key is checked.
    expect((await create(emu.url, 'x'.repeat(65 * 1024), { 'x-api-key': 'wrong' })).status).toBe(413);
    // The default is podhook's own MAX_BODY_BYTES default.
    const plain = await emulator();
    expect((await fetch(`${plain.url}/_emulator/events`, { method: 'POST', body: new Uint8Array(262_145) })).status).toBe(413);
    expect((await fetch(`${plain.url}/_emulator/events`, { method: 'POST', body: JSON.stringify({ type: 'pod.created', data: { pad: 'x'.repeat(200_000) } }) })).status).toBe(202);
  });

  it('checks the events it is asked to emit', async () => {
    const emu = await emulator();
    const emit = (body: unknown) => fetch(`${emu.url}/_emulator/events`, { method: 'POST', body: JSON.stringify(body) });
    expect((await emit({ type: 'pod.moved' })).status).toBe(400);
    expect((await emit({ type: 'pod.created', id: 'not-a-uuid' })).status).toBe(400);
    expect((await emit({ type: 'pod.created', data: [1] })).status).toBe(400);
    const ok = await emit({ type: 'pod.created' });
    expect(ok.status).toBe(202);
    expect(((await ok.json()) as { event: { webhook_ids: string[] } }).event.webhook_ids).toEqual([]);
  });
});
