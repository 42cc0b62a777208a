// GET /_podhook/api/pods: the service's pods beside what podhook holds, on a real Node server and
// the emulator, and every way it refuses.
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/core/config.js';
import type { PodsReport } from '../../../src/core/pods/pods-report.js';
import { startEmulator } from '../../../src/emulator/start-emulator.js';
import { startServer, type RunningServer } from '../../../src/node/serve.js';
import { handlers } from '../../fixtures/recording-handlers.js';
import { captureLogger } from '../../helpers/capture-logger.js';
import { signDelivery, TEST_SECRET } from '../../helpers/sign.js';
import { dbIn, useTempDir } from '../../helpers/temp-dir.js';

const TOKEN = 'adm_pods_0123456789abcdef0123456789ab';
const KEY = 'svc_live_key_admin_pods_1';
const tempDir = useTempDir();
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function receiver(env: Record<string, string> = {}): Promise<RunningServer> {
  const config = parseConfig({ DATABASE_PATH: dbIn(tempDir()), SVC_WEBHOOK_SECRET: TEST_SECRET, PORT: '0', HOST: '127.0.0.1', ADMIN_TOKEN: TOKEN, ...env });
  const server = await startServer({ config, logger: captureLogger().logger, handlers, payloads: { orderFields: { podId: 'pod.id', occurredAt: null } } });
  cleanups.push(() => server.close(100));
  return server;
}

const get = (server: RunningServer, path: string, token: string | null = TOKEN) =>
  fetch(`${server.url}/_podhook/api${path}`, { headers: token ? { authorization: `Bearer ${token}` } : {} });

describe('GET /_podhook/api/pods', () => {
  it('answers the report, or only the pods that disagree with drift=true', async () => {
    const emu = await startEmulator({ apiKey: KEY, seedPods: 2 });
    cleanups.push(() => emu.close());
    const server = await receiver({ SVC_BASE_URL: emu.url, SVC_API_KEY: KEY });
    const [known, unknown] = emu.emulator.pods.all();
    const gone = crypto.randomUUID();
    for (const [type, id] of [['pod.created', known!.id], ['pod.active', gone]] as const) {
      const d = signDelivery({ t: Math.floor(Date.now() / 1000), eventType: type, body: { pod: { id } } });
      expect((await fetch(`${server.url}/webhooks`, { method: 'POST', headers: d.headers, body: d.body })).status).toBe(200);
    }
    const all = (await (await get(server, '/pods')).json()) as PodsReport;
    expect(all).toMatchObject({ listed: 2, held: 2, drift: { unknown_to_podhook: 1, destroyed_but_listed: 0, not_listed: 1 }, pod_ids: { source: 'orderFields' } });
    expect(all.pods.map((p) => [p.pod_id, p.drift])).toEqual([
      [known!.id, null],
      [unknown!.id, 'unknown_to_podhook'],
      [gone, 'not_listed'],
    ]);
    const drift = (await (await get(server, '/pods?drift=true')).json()) as PodsReport;
    expect(drift.pods.map((p) => p.pod_id)).toEqual([unknown!.id, gone]);
  });

  it('refuses without the admin token (401), a drift that is not a boolean (400), and without SVC_BASE_URL or a key (503 not_configured)', async () => {
    const server = await receiver();
    expect((await get(server, '/pods', null)).status).toBe(401);
    expect((await get(server, '/pods?drift=maybe')).status).toBe(400);
    const unconfigured = await get(server, '/pods');
    expect(unconfigured.status).toBe(503);
    expect(await unconfigured.json()).toEqual({ error: { code: 'not_configured', message: expect.stringContaining('SVC_BASE_URL is not set') } });
    const noKey = await receiver({ SVC_BASE_URL: 'http://127.0.0.1:9' });
    const answer = (await (await get(noKey, '/pods')).json()) as { error: { code: string; message: string } };
    expect(answer.error.code).toBe('not_configured');
    expect(answer.error.message).toContain('no compute API key');
  });

  it('answers a service failure as 502 with its code and request id, and an empty read bucket as 429 with retry_at', async () => {
    const emu = await startEmulator({ apiKey: KEY, seedPods: 1 });
    cleanups.push(() => emu.close());
    const wrongKey = await receiver({ SVC_BASE_URL: emu.url, SVC_API_KEY: 'svc_not_the_key_0' });
    const refused = await get(wrongKey, '/pods');
    expect(refused.status).toBe(502);
    const { error } = (await refused.json()) as { error: { code: string; details: Record<string, unknown> } };
    expect(error).toMatchObject({ code: 'service_error', details: { service_code: 'unauthorized', service_status: 401, request_id: expect.stringMatching(/^podhook-/) } });

    const limited = await receiver({ SVC_BASE_URL: emu.url, SVC_API_KEY: KEY, SVC_READ_LIMIT: '1/1h' });
    expect((await get(limited, '/pods')).status).toBe(200);
    const empty = await get(limited, '/pods');
    expect(empty.status).toBe(429);
    const body = (await empty.json()) as { error: { code: string; details: { bucket: string; retry_at: string } } };
    expect(body.error).toMatchObject({ code: 'rate_limited', details: { bucket: 'reads' } });
    expect(Date.parse(body.error.details.retry_at)).toBeGreaterThan(Date.now() + 3_000_000);
    expect(emu.emulator.bucketCounts().reads.allowed).toBe(1); // the first report (a wrong key is refused before the bucket)
  });
});
