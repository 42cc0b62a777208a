// What the admin API and the inspector show of durable steps, on a real Node server on 127.0.0.1
// (real SQLite file, dispatcher on): a run's steps in order without their results, a parked run's
// sleep and wake time, and redeliver, plain (resumes, so a renamed step fails again) or fresh.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { parseConfig } from '../../../src/core/config.js';
import { startServer, type RunningServer } from '../../../src/node/serve.js';
import { mintedSecret, ROTATE_AFTER_MS, stepsAfter } from '../../fixtures/step-ops-handlers.js';
import { captureLogger } from '../../helpers/capture-logger.js';
import { signDelivery, TEST_SECRET } from '../../helpers/sign.js';
import { MISMATCH, seedStepMismatch, TEST_STEP_KEY } from '../../helpers/steps-runtime.js';
import { dbIn, useTempDir } from '../../helpers/temp-dir.js';

const TOKEN = 'adm_steps_0123456789abcdef0123456789ab';
const tempDir = useTempDir();
let server: RunningServer | undefined;
afterEach(async () => {
  await server?.close(100);
  server = undefined;
});

async function start(path: string) {
  const config = parseConfig({
    DATABASE_PATH: path,
    SVC_WEBHOOK_SECRET: TEST_SECRET,
    PORT: '0',
    HOST: '127.0.0.1',
    ADMIN_TOKEN: TOKEN,
    STEP_ENCRYPTION_KEY: TEST_STEP_KEY,
    RETRY_BASE_MS: '20',
  });
  server = await startServer({ config, logger: captureLogger().logger, handlers: stepsAfter });
  return server;
}

const auth = { authorization: `Bearer ${TOKEN}` };
const get = (path: string) => fetch(`${server!.url}/_podhook${path}`, { headers: auth });
const json = async <T = Record<string, any>>(path: string): Promise<T> => (await get(`/api${path}`)).json() as Promise<T>;
const replay = (body: object) =>
  fetch(`${server!.url}/_podhook/api/replay`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify(body) });
const redeliverForm = (id: string, fields: Record<string, string>) =>
  fetch(`${server!.url}/_podhook/deliveries/${id}/redeliver`, {
    method: 'POST',
    redirect: 'manual',
    headers: { ...auth, 'content-type': 'application/x-www-form-urlencoded', origin: server!.url },
    body: new URLSearchParams(fields).toString(),
  });
/** A time as the inspector shows it. */
const shown = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');

async function waitFor(id: string, check: (d: { status: string; attempts: number; lastError: string | null }) => boolean) {
  await vi.waitFor(async () => expect(check((await server!.runtime.store.get(id))!), `delivery ${id}`).toBe(true), { timeout: 10_000, interval: 20 });
}
const stepNames = async (id: string, handler: string) => (await server!.runtime.store.loadSteps(id, handler)).map((s) => `${s.name}:${s.state}`);

describe('durable steps in the admin API and the inspector', () => {
  it("shows a run's steps in order without their results, a sealed one as sealed, and a parked run's sleep and wake time", async () => {
    await start(dbIn(tempDir()));
    const d = signDelivery({ eventType: 'pod.created', t: Math.floor(Date.now() / 1000) });
    expect((await fetch(`${server!.url}/webhooks`, { method: 'POST', headers: d.headers, body: d.body })).status).toBe(200);
    // Its first run fails at "store in vault"; the retry stores it and parks for an hour.
    await vi.waitFor(async () => expect(await server!.runtime.store.parkedRuns([d.eventId])).toHaveLength(1), { timeout: 10_000, interval: 20 });
    const receivedAt = (await server!.runtime.store.get(d.eventId))!.receivedAt;
    const wakeAt = new Date(receivedAt + ROTATE_AFTER_MS).toISOString();

    const one = await json(`/deliveries/${d.eventId}`);
    expect(one.status).toBe('queued');
    expect(one.runs).toMatchObject([
      { handler: 'mintKey', attempt: 1, outcome: 'failed', error: 'StepError: step "store in vault" (#2, attempt 1) failed: Error: vault unavailable', steps: null, parked: null },
      { handler: 'mintKey', attempt: 2, outcome: 'parked', error: null, parked: { step: 'rotate', wake_at: wakeAt } },
    ]);
    const any = { duration_ms: expect.any(Number), started_at: expect.any(String), finished_at: expect.any(String) };
    expect(one.runs[1].steps).toEqual([
      { seq: 1, name: 'mint', kind: 'step', state: 'done', attempts: 1, ...any, result_bytes: null, sealed: true, error: null, wake_at: null, matched_event_id: null },
      {
        seq: 2, name: 'store in vault', kind: 'step', state: 'done', attempts: 2, ...any,
        result_bytes: JSON.stringify({ v: { stored: mintedSecret().length } }).length, sealed: false, error: null, wake_at: null, matched_event_id: null,
      },
      { seq: 3, name: 'rotate', kind: 'sleep', state: 'sleeping', attempts: 1, duration_ms: null, started_at: expect.any(String), finished_at: null, result_bytes: null, sealed: false, error: null, wake_at: wakeAt, matched_event_id: null },
    ]);
    const list = await json<{ deliveries: { event_id: string; status: string; parked: unknown }[] }>('/deliveries');
    expect(list.deliveries.find((r) => r.event_id === d.eventId)).toMatchObject({ status: 'queued', parked: { handler: 'mintKey', step: 'rotate', wake_at: wakeAt } });

    const page = await (await get(`/deliveries/${d.eventId}`)).text();
    expect(page).toContain(`>parked until ${shown(receivedAt + ROTATE_AFTER_MS)}</span>`);
    expect(page).toMatch(/<dt>parked<\/dt><dd>mintKey at sleep <code>rotate<\/code>/);
    expect(page).toContain('<tr class="steps" data-handler="mintKey">');
    expect(page).toContain('<td data-label="result" class="sealed">sealed</td>');
    expect(page).toContain(`<td data-label="result">${JSON.stringify({ v: { stored: mintedSecret().length } }).length} bytes</td>`);
    expect(page).toContain('<input type="checkbox" name="fresh" value="1"/>');
    const listPage = await (await get('/')).text();
    const item = listPage.slice(listPage.indexOf(`data-event-id="${d.eventId}"`));
    expect(item.slice(0, item.indexOf('</li>'))).toContain(`>parked until ${shown(receivedAt + ROTATE_AFTER_MS)}</span>`);
  });

  it('redelivers through the API: a plain replay resumes (the renamed step fails again), a fresh one runs from the start', async () => {
    const path = dbIn(tempDir());
    const [id] = (await seedStepMismatch(path)) as [string];
    await start(path);
    const dead = await json(`/deliveries/${id}`);
    expect(dead).toMatchObject({ status: 'dead', attempts: 1 });
    expect(dead.runs.at(-1)).toMatchObject({ handler: 'diagnose', parked: null });
    expect(dead.runs.at(-1).steps.map((s: { name: string; state: string }) => `${s.name}:${s.state}`)).toEqual(['queue diagnose:done', 'wait for output:sleeping']);

    const bad = await replay({ event_ids: [id], fresh: 'yes' });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { code: string } }).error.code).toBe('invalid_request');
    expect(await stepNames(id, 'diagnose')).toEqual(['queue diagnose:done', 'wait for output:sleeping']);

    expect(await (await replay({ event_ids: [id] })).json()).toEqual({ replayed: 1 });
    await waitFor(id, (d) => d.status === 'dead' && d.attempts === 2);
    expect((await server!.runtime.store.get(id))!.lastError).toContain(MISMATCH);
    expect(await stepNames(id, 'diagnose')).toEqual(['queue diagnose:done', 'wait for output:sleeping']);

    expect(await (await replay({ status: 'dead', type: 'pod.backup.failed', fresh: true })).json()).toEqual({ replayed: 1 });
    await waitFor(id, (d) => d.status === 'processed');
    expect(await stepNames(id, 'diagnose')).toEqual(['queue logs:done', 'wait for output:done', 'post:done']);
  });

  it("redelivers from the inspector's Redeliver: plain, then from the start when the box is checked", async () => {
    const path = dbIn(tempDir());
    const [id] = (await seedStepMismatch(path)) as [string];
    await start(path);
    const plain = await redeliverForm(id, {});
    expect(plain.status).toBe(303);
    expect(plain.headers.get('location')).toBe(`/_podhook/deliveries/${id}?redelivered=1`);
    await waitFor(id, (d) => d.status === 'dead' && d.attempts === 2);
    expect((await server!.runtime.store.get(id))!.lastError).toContain(MISMATCH);

    const fresh = await redeliverForm(id, { fresh: '1' });
    expect(fresh.status).toBe(303);
    await waitFor(id, (d) => d.status === 'processed');
    expect(await stepNames(id, 'diagnose')).toEqual(['queue logs:done', 'wait for output:done', 'post:done']);
  });

  it('redelivers dead letters in bulk from the start when the box is checked', async () => {
    const path = dbIn(tempDir());
    const ids = await seedStepMismatch(path, 2);
    await start(path);
    const confirm = await (await get('/redeliver?type=pod.backup.failed')).text();
    expect(confirm).toContain('<input type="checkbox" name="fresh" value="1"/>');
    const posted = await fetch(`${server!.url}/_podhook/redeliver`, {
      method: 'POST',
      redirect: 'manual',
      headers: { ...auth, 'content-type': 'application/x-www-form-urlencoded', origin: server!.url },
      body: new URLSearchParams({ type: 'pod.backup.failed', since: '', expected: '2', fresh: '1' }).toString(),
    });
    expect(posted.status).toBe(303);
    for (const id of ids) await waitFor(id, (d) => d.status === 'processed');
  });
});
