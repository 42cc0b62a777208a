// Drift, noticed at the door, in a real `podhook serve` whose registry exports a module
// `podhook schemas` generated: deliveries that do not fit are stored, answered, dispatched,
// recorded, counted and alerted (once per type and path), with no value from the body anywhere.
import { once } from 'node:events';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { startAlertReceiver, type AlertReceiver } from '../helpers/alert-receiver.js';
import { useLearnedRegistries } from '../helpers/learned-registry.js';
import { signDelivery, TEST_SECRET } from '../helpers/sign.js';
import { spawnServer, type ServerProcess } from '../helpers/spawn-podhook.js';
import { dbIn, useTempDir } from '../helpers/temp-dir.js';
import { fittingPayload, learnedShapes } from '../fixtures/shapes/learned-samples.js';
import { inferShapes } from '../../src/core/shapes/index.js';

const tempDir = useTempDir();
const learnedRegistry = useLearnedRegistries({ compiled: true });
const ADMIN_TOKEN = 'admin-token-for-the-drift-test-0123456789';

const running: Array<ServerProcess | AlertReceiver> = [];
afterEach(async () => {
  for (const r of running.splice(0)) {
    if (!('child' in r)) await r.close();
    else if (r.child.exitCode === null) {
      r.child.kill('SIGTERM');
      await once(r.child, 'close');
    }
  }
});

interface DeliveryRecord {
  status: string;
  last_error: string | null;
  /** Absent when it fit (the export record's way, as conflict_with). */
  drift?: Array<{ path: string; kind: string; message: string }>;
}

describe('payload drift at the door (podhook serve with a generated module)', () => {
  it('stores, answers, dispatches and records a drifted delivery; alerts once per type and path; counts it; never quotes the body', { timeout: 60_000 }, async () => {
    const receiver = await startAlertReceiver();
    running.push(receiver);
    const server = await spawnServer(
      { DATABASE_PATH: dbIn(tempDir()), SVC_WEBHOOK_SECRET: TEST_SECRET, ALERT_WEBHOOK_URL: receiver.url, ADMIN_TOKEN },
      { handlers: learnedRegistry(learnedShapes()) },
    );
    running.push(server);
    const api = async <T>(path: string) => (await (await fetch(`${server.url}/_podhook/api${path}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json()) as T;
    const record = (id: string) => api<DeliveryRecord>(`/deliveries/${id}`);
    const post = async (body: object) => {
      const d = signDelivery({ t: Math.floor(Date.now() / 1000), body });
      const res = await fetch(`${server.url}/webhooks`, { method: 'POST', headers: d.headers, body: d.body });
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ received: true, duplicate: false });
      return d.eventId;
    };
    const settled = (id: string, status: string, drifted: boolean) =>
      vi.waitFor(async () => {
        const r = await record(id);
        expect(r.status).toBe(status);
        expect(r.drift !== undefined).toBe(drifted);
        return r;
      }, { timeout: 15_000 });

    // A payload that fits: processed, no drift.
    const fits = await post(fittingPayload(3));
    expect((await settled(fits, 'processed', false)).drift).toBeUndefined();

    // A new field: stored, answered, processed (the schema lets unknown keys through), and recorded.
    const regionMarker = 'region-marker-3b9d';
    const newField = await post({ ...fittingPayload(4), pod: { ...fittingPayload(4).pod, region: regionMarker } });
    expect((await settled(newField, 'processed', true)).drift).toEqual([{ path: '$.pod.region', kind: 'new_field', message: 'new field: string' }]);
    await vi.waitFor(() => expect(receiver.alerts().filter((a) => a.podhook.kind === 'schema_drift')).toHaveLength(1), { timeout: 10_000 });
    const [alert] = receiver.alerts();
    expect(alert!.podhook).toEqual({ kind: 'schema_drift', event_type: 'pod.created', path: '$.pod.region', change: 'new_field', event_id: newField });
    expect(alert!.text).toContain(`pod.created payloads changed at $.pod.region (new field), first seen in delivery ${newField}`);

    // The same place again within ALERT_MIN_INTERVAL_MINUTES: recorded, no second alert.
    const again = await post({ ...fittingPayload(5), pod: { ...fittingPayload(5).pod, region: regionMarker } });
    await settled(again, 'processed', true);

    // A new value of a low-cardinality field: recorded by path and kind; the value appears nowhere.
    const statusMarker = 'status-marker-7f1e';
    const newValue = await post({ ...fittingPayload(6), pod: { ...fittingPayload(6).pod, status: statusMarker } });
    expect((await settled(newValue, 'processed', true)).drift).toEqual([
      { path: '$.pod.status', kind: 'new_value', message: 'new value: not one of the values recorded for it' },
    ]);

    // A payload the generated schema refuses: its handler is not run, the delivery is dead (invalid_payload).
    const refused = await post({ ...fittingPayload(7), pod: { ...fittingPayload(7).pod, id: 'not-a-uuid' } });
    const dead = await settled(refused, 'dead', true);
    expect(dead.last_error).toBe('welcome: invalid_payload: the payload does not fit the pod.created schema podhook schemas learned: pod.id: Invalid UUID');
    expect(dead.drift).toEqual([{ path: '$.pod.id', kind: 'changed_type', message: 'changed type: not always a uuid now' }]);

    await vi.waitFor(() => expect(receiver.alerts().map((a) => a.podhook.kind).sort()).toEqual(['dead_letter', 'schema_drift', 'schema_drift', 'schema_drift']), { timeout: 10_000 });
    const driftAlerts = receiver.alerts().filter((a) => a.podhook.kind === 'schema_drift');
    expect(driftAlerts.map((a) => [a.podhook.path, a.podhook.change, a.podhook.event_id])).toEqual([
      ['$.pod.region', 'new_field', newField],
      ['$.pod.status', 'new_value', newValue],
      ['$.pod.id', 'changed_type', refused],
    ]);

    // drift=true finds exactly the drifted ones, in the list and in the export.
    const listed = await api<{ deliveries: Array<{ event_id: string; drift: unknown }> }>('/deliveries?drift=true');
    expect(listed.deliveries.map((d) => d.event_id).sort()).toEqual([newField, again, newValue, refused].sort());
    expect((await api<{ deliveries: Array<{ event_id: string }> }>('/deliveries?drift=false')).deliveries.map((d) => d.event_id)).toEqual([fits]);
    const exported = await (await fetch(`${server.url}/_podhook/api/export?drift=true`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).text();
    expect(exported.trim().split('\n').map((l) => (JSON.parse(l) as { event_id: string }).event_id).sort()).toEqual([newField, again, newValue, refused].sort());

    // /metrics counts each difference by type and kind.
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    expect(metrics).toContain('podhook_payload_drift_total{kind="new_field",type="pod.created"} 2');
    expect(metrics).toContain('podhook_payload_drift_total{kind="new_value",type="pod.created"} 1');
    expect(metrics).toContain('podhook_payload_drift_total{kind="changed_type",type="pod.created"} 1');

    // The log says where and what kind, never a value from the body; nor do the alerts.
    expect(server.output()).toMatch(/"drift":\[\{"path":"\$\.pod\.status","kind":"new_value"\}\].*"msg":"payload drift"/);
    for (const text of [receiver.raw.join('\n'), server.output()]) for (const leak of [regionMarker, statusMarker, 'not-a-uuid']) expect(text).not.toContain(leak);
  });

  it("alerts once per type and place of the learned shape, however many of the sender's keys the paths carry", { timeout: 60_000 }, async () => {
    // `usage` is learned as a map (its keys are pod ids: more than 200 distinct), `pod` as an object.
    const T0 = Date.parse('2026-05-01T12:00:00Z');
    const samples = Array.from({ length: 240 }, (_, i) => ({
      eventType: 'pod.created',
      payload: { ...fittingPayload(i), usage: { [crypto.randomUUID()]: { cpu: i } } },
      receivedAt: T0 + i * 60_000,
    }));
    const receiver = await startAlertReceiver();
    running.push(receiver);
    const server = await spawnServer(
      { DATABASE_PATH: dbIn(tempDir()), SVC_WEBHOOK_SECRET: TEST_SECRET, ALERT_WEBHOOK_URL: receiver.url, ADMIN_TOKEN },
      { handlers: learnedRegistry(inferShapes(samples)) },
    );
    running.push(server);
    const sent: string[] = [];
    for (let i = 0; i < 3; i++) {
      // Five new ids whose values changed type (string, was integer), and three new keys on the pod.
      const usage = Object.fromEntries(Array.from({ length: 5 }, () => [crypto.randomUUID(), { cpu: 'high' }]));
      const pod = { ...fittingPayload(i).pod, ...Object.fromEntries(Array.from({ length: 3 }, () => [`x-${crypto.randomUUID()}`, 1])) };
      const d = signDelivery({ t: Math.floor(Date.now() / 1000), body: { ...fittingPayload(i), pod, usage } });
      expect((await fetch(`${server.url}/webhooks`, { method: 'POST', headers: d.headers, body: d.body })).status).toBe(200);
      sent.push(d.eventId);
    }
    // Each recorded its eight differences, paths and all.
    await vi.waitFor(async () => {
      for (const id of sent) {
        const r = (await (await fetch(`${server.url}/_podhook/api/deliveries/${id}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json()) as DeliveryRecord;
        expect(r.drift, id).toHaveLength(8);
      }
    }, { timeout: 15_000 });
    // Stopped: every alert it started has been sent (or given up) before it exits.
    server.child.kill('SIGTERM');
    await once(server.child, 'close');
    const drift = receiver.alerts().filter((a) => a.podhook.kind === 'schema_drift');
    expect(drift.map((a) => [a.podhook.change, a.podhook.event_id]).sort()).toEqual([['changed_type', sent[0]], ['new_field', sent[0]]].sort());
    expect(drift.find((a) => a.podhook.change === 'changed_type')!.podhook.path).toMatch(/^\$\.usage\["[0-9a-f-]{36}"\]\.cpu$/);
  });
});
