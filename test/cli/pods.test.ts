import { afterEach, describe, expect, it } from 'vitest';
import type { PodsReport } from '../../src/core/pods/pods-report.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/start-emulator.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { RECORDING_REGISTRY } from '../fixtures/registry-paths.js';
import { newDelivery } from '../store/store-contract.js';
import { json, useFakeServices } from '../helpers/fake-pods-service.js';
import { dbIn, useTempDir } from '../helpers/temp-dir.js';
import { runMain } from './run-main.js';

const KEY = 'svc_live_key_pods_cli_77';
/** Names the pod id once for every type: `orderFields = { podId: 'pod.id', … }`. */
const NAMED_REGISTRY = new URL('../fixtures/registries/order-by-pod-named.ts', import.meta.url).pathname;
const tempDir = useTempDir();
const fakeService = useFakeServices();
const running: RunningEmulator[] = [];
afterEach(async () => {
  for (const r of running.splice(0)) await r.close();
});

/**
 * A service listing three pods and a podhook holding events for four, so each kind of
 * disagreement appears once, beside one pod both agree on and one destroyed pod both agree is gone.
 */
async function driftingWorld() {
  const emu = await startEmulator({ apiKey: KEY });
  running.push(emu);
  const agreed = emu.emulator.pods.add({ name: 'agreed' }).id;
  const unheard = emu.emulator.pods.add({ name: 'unheard' }).id;
  const zombie = emu.emulator.pods.add({ name: 'zombie' }).id;
  const vanished = crypto.randomUUID();
  const buried = crypto.randomUUID();
  const db = dbIn(tempDir());
  const { store, close } = openSqliteStore(db);
  const at = Date.now() - 60_000;
  const event = (type: string, podId: string, offset: number) =>
    newDelivery({ eventType: type, receivedAt: at + offset, body: new TextEncoder().encode(JSON.stringify({ pod: { id: podId, status: 'active' } })) });
  await store.claim([
    event('pod.created', agreed, 1),
    event('pod.active', agreed, 2),
    event('pod.created', zombie, 3),
    event('pod.destroyed', zombie, 4),
    event('pod.active', vanished, 5),
    event('pod.created', buried, 6),
    event('pod.destroyed', buried, 7),
    // A body without a pod id where the registry says: tied to no pod.
    newDelivery({ eventType: 'pod.renewed', receivedAt: at + 8, body: new TextEncoder().encode('{"renewal":1}') }),
  ]);
  close();
  const env = { SVC_BASE_URL: emu.url, SVC_API_KEY: KEY, DATABASE_PATH: db };
  return { emu, env, db, ids: { agreed, unheard, zombie, vanished, buried } };
}

describe('podhook pods', () => {
  it('--drift --json: the three kinds of disagreement, and nothing where the two agree (exit 3)', async () => {
    const { env, ids } = await driftingWorld();
    const result = await runMain(['pods', '--drift', '--json', '--handlers', NAMED_REGISTRY], env);
    expect(result.code, result.stderr).toBe(3);
    const report = JSON.parse(result.stdout) as PodsReport;
    expect(report).toMatchObject({ listed: 3, held: 4, drift: { unknown_to_podhook: 1, destroyed_but_listed: 1, not_listed: 1 } });
    expect(report.pods.map((p) => [p.pod_id, p.drift]).sort()).toEqual(
      [
        [ids.unheard, 'unknown_to_podhook'],
        [ids.zombie, 'destroyed_but_listed'],
        [ids.vanished, 'not_listed'],
      ].sort(),
    );
    const zombie = report.pods.find((p) => p.pod_id === ids.zombie)!;
    expect(zombie).toMatchObject({ listed: true, name: 'zombie', last_event_type: 'pod.destroyed', deliveries: 2 });
    expect(report.pods.find((p) => p.pod_id === ids.vanished)).toMatchObject({ listed: false, status: null, last_event_type: 'pod.active' });
    expect(report.pod_ids).toEqual({ source: 'orderFields', unknown_types: [], unattributed: { 'pod.renewed': 1 } });
    expect(result.stderr).toContain('1 stored delivery names no pod podhook can read (pod.renewed: 1)');
  });

  it('without --drift lists every pod, the agreeing ones too, as a table (exit 0)', async () => {
    const { env, ids } = await driftingWorld();
    const result = await runMain(['pods', '--handlers', NAMED_REGISTRY, '--page-size', '1'], env);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('3 pods listed by the service, 4 held by podhook; disagreeing: 1 unknown_to_podhook, 1 destroyed_but_listed, 1 not_listed.');
    for (const id of Object.values(ids)) expect(result.stdout).toContain(id);
    const agreed = result.stdout.split('\n').find((l) => l.includes(ids.agreed))!;
    expect(agreed).toMatch(/agreed\s+provisioning\s+pod\.active\s+\S+Z\s*$/);
    const buried = result.stdout.split('\n').find((l) => l.includes(ids.buried))!;
    expect(buried).toMatch(/not listed\s+pod\.destroyed\s+\S+Z\s*$/);
  });

  it('pages through the list within the read bucket: one request per page', async () => {
    const { env, emu } = await driftingWorld();
    for (let i = 0; i < 4; i++) emu.emulator.pods.add();
    const result = await runMain(['pods', '--json', '--handlers', NAMED_REGISTRY, '--page-size', '2'], env);
    expect(result.code, result.stderr).toBe(0);
    expect((JSON.parse(result.stdout) as PodsReport).listed).toBe(7);
    expect(emu.emulator.bucketCounts().reads).toEqual({ allowed: 4, refused: 0 });
  });

  it('says which types it cannot tie to a pod when the registry names no pod id field: their pods show as unknown', async () => {
    const { env } = await driftingWorld();
    const result = await runMain(['pods', '--drift', '--json', '--handlers', RECORDING_REGISTRY], env);
    expect(result.code).toBe(3);
    const report = JSON.parse(result.stdout) as PodsReport;
    expect(report.pod_ids.source).toBe('none');
    expect(report.held).toBe(0);
    expect(report.drift.unknown_to_podhook).toBe(3);
    expect(result.stderr).toContain('8 stored deliveries name no pod podhook can read');
    expect(result.stderr).toContain('run `podhook schemas` on real deliveries or export orderFields');
  });

  it('with --drift and nothing to report: exit 0 and says they agree', async () => {
    const emu = await startEmulator({ apiKey: KEY });
    running.push(emu);
    const db = dbIn(tempDir());
    openSqliteStore(db).close();
    const result = await runMain(['pods', '--drift', '--handlers', NAMED_REGISTRY], { SVC_BASE_URL: emu.url, SVC_API_KEY: KEY, DATABASE_PATH: db });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('The service and podhook agree on every pod.');
  });

  it('refuses to run without SVC_BASE_URL, an API key or a database (exit 2), and sends nothing', async () => {
    const { env, emu } = await driftingWorld();
    const noUrl = await runMain(['pods'], { ...env, SVC_BASE_URL: '' });
    expect(noUrl.code).toBe(2);
    expect(noUrl.stderr).toContain('SVC_BASE_URL is not set');
    const noKey = await runMain(['pods'], { ...env, SVC_API_KEY: '' });
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toContain('no compute API key: set SVC_API_KEY, or store one with `podhook secrets add --api-key');
    const noDb = await runMain(['pods'], { ...env, DATABASE_PATH: dbIn(tempDir()) });
    expect(noDb.code).toBe(2);
    expect(noDb.stderr).toContain('no database at');
    const badSize = await runMain(['pods', '--page-size', '101'], env);
    expect(badSize.code).toBe(2);
    expect(emu.emulator.bucketCounts().reads).toEqual({ allowed: 0, refused: 0 });
  });

  it('reports a key the service refuses with its code and request id (exit 1), never the key', async () => {
    const { env } = await driftingWorld();
    const result = await runMain(['pods', '--handlers', NAMED_REGISTRY], { ...env, SVC_API_KEY: 'svc_wrong_key_123' });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('the service refused the API key (unauthorized)');
    expect(result.stderr).toMatch(/request id: podhook-[0-9a-f-]{36}/);
    expect(`${result.stdout}${result.stderr}`).not.toContain('svc_wrong_key_123');
  });

  it('uses the key stored with `secrets add --api-key` when SVC_API_KEY is unset', async () => {
    const { env } = await driftingWorld();
    const { SVC_API_KEY: _unset, ...withoutKey } = env;
    const stored = await runMain(['secrets', 'add', '--api-key'], withoutKey, { stdin: `${KEY}\n` });
    expect(stored.code, stored.stderr).toBe(0);
    const result = await runMain(['pods', '--json', '--handlers', NAMED_REGISTRY], withoutKey);
    expect(result.code, result.stderr).toBe(0);
    expect((JSON.parse(result.stdout) as PodsReport).listed).toBe(3);
  });

  it('--drift stops at a cursor the service gave before (c1, c2, c1): exit 1 naming it, one request per page, the read bucket spared', async () => {
    const service = await fakeService((_req, res, n) => json(res, 200, { pods: [], next_cursor: n % 2 === 0 ? 'c1' : 'c2' }));
    const db = dbIn(tempDir());
    openSqliteStore(db).close();
    const result = await runMain(['pods', '--drift', '--handlers', NAMED_REGISTRY], { SVC_BASE_URL: service.url, SVC_API_KEY: KEY, DATABASE_PATH: db });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("the service failed (unexpected_response): the service's pages never end");
    expect(service.requests).toHaveLength(3);
    const { store, close } = openSqliteStore(db);
    const take = await store.takeRateTokens({ account: 'default', bucket: 'reads', capacity: 240, windowMs: 60_000, now: Date.now(), count: 237, maxWaitMs: 0 });
    close();
    expect(take.granted).toBe(true);
  });
});
