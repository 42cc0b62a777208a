import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { startAlertReceiver, URL_TOKEN } from '../helpers/alert-receiver.js';
import { signDelivery, TEST_SECRET } from '../helpers/sign.js';
import { runCli, spawnServer, type ServerProcess } from '../helpers/spawn-podhook.js';
import { dbIn, useTempDir } from '../helpers/temp-dir.js';

const FAILING = fileURLToPath(new URL('../fixtures/failing-handlers.ts', import.meta.url));
const HOUR = 3_600_000;
const tempDir = useTempDir();
const running: Array<ServerProcess | Awaited<ReturnType<typeof startAlertReceiver>>> = [];
afterEach(async () => {
  for (const r of running.splice(0)) {
    if ('child' in r) {
      if (r.child.exitCode === null) {
        r.child.kill('SIGTERM');
        await once(r.child, 'close');
      }
    } else await r.close();
  }
});

async function stop(server: ServerProcess) {
  server.child.kill('SIGTERM');
  const [code] = await once(server.child, 'close');
  return code as number;
}

describe('alerts from a running podhook serve', () => {
  it('alerts a dead letter to a local receiver, with no body, header value or secret in the alert or the logs', async () => {
    const receiver = await startAlertReceiver();
    running.push(receiver);
    const path = dbIn(tempDir());
    const server = await spawnServer(
      {
        DATABASE_PATH: path,
        SVC_WEBHOOK_SECRET: TEST_SECRET,
        ALERT_WEBHOOK_URL: receiver.url,
        DISPATCH_MAX_ATTEMPTS: '2',
        RETRY_BASE_MS: '1',
        RETRY_MAX_MS: '5',
        DISPATCH_POLL_MS: '20',
      },
      { handlers: FAILING },
    );
    running.push(server);

    const bodyMarker = 'body-marker-9f3e2d';
    const d = signDelivery({ t: Math.floor(Date.now() / 1000), body: { pod: { id: 'p-1', name: bodyMarker } } });
    const headerMarker = 'header-marker-41b7';
    const res = await fetch(`${server.url}/webhooks`, { method: 'POST', headers: { ...d.headers, 'x-request-note': headerMarker }, body: d.body });
    expect(res.status).toBe(200);

    await vi.waitFor(() => expect(receiver.raw.length, 'a dead-letter alert').toBeGreaterThan(0), { timeout: 15_000 });
    const [alert] = receiver.alerts();
    expect(alert!.podhook).toMatchObject({
      kind: 'dead_letter',
      event_id: d.eventId,
      event_type: 'pod.created',
      attempts: 2,
      handler: 'alwaysFails',
      error: 'Error: downstream refused the call',
    });
    expect(alert!.text).toContain(`delivery ${d.eventId} (pod.created) is dead after 2 attempts: alwaysFails: Error: downstream refused the call`);
    const { store, close } = openSqliteStore(path);
    expect(await store.get(d.eventId)).toMatchObject({ status: 'dead', attempts: 2 });
    close();

    expect(await stop(server)).toBe(0);
    const signature = d.headers['x-svc-signature']!;
    for (const text of [receiver.raw.join('\n'), server.output()]) {
      for (const leak of [bodyMarker, headerMarker, signature, signature.split('v1=')[1]!, TEST_SECRET, URL_TOKEN]) expect(text).not.toContain(leak);
    }
    expect(server.output()).toMatch(/"msg":"alert sent"/);
    expect(receiver.raw).toHaveLength(1);
  });

  it('alerts a delivery stored dead on arrival (not JSON) as a dead letter, quoting no part of its body', async () => {
    const receiver = await startAlertReceiver();
    running.push(receiver);
    const path = dbIn(tempDir());
    const server = await spawnServer({ DATABASE_PATH: path, SVC_WEBHOOK_SECRET: TEST_SECRET, ALERT_WEBHOOK_URL: receiver.url }, { handlers: FAILING });
    running.push(server);

    const bodyMarker = 'notjson-marker-5c2a';
    const d = signDelivery({ t: Math.floor(Date.now() / 1000), body: `{"pod": ${bodyMarker}` });
    const res = await fetch(`${server.url}/webhooks`, { method: 'POST', headers: d.headers, body: d.body });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ received: true, event_id: d.eventId, duplicate: false });

    await vi.waitFor(() => expect(receiver.raw.length, 'a dead-letter alert').toBeGreaterThan(0), { timeout: 15_000 });
    const [alert] = receiver.alerts();
    expect(alert!.podhook).toMatchObject({
      kind: 'dead_letter',
      event_id: d.eventId,
      event_type: 'pod.created',
      attempts: 0,
      handler: null,
      error: 'invalid_json: the stored body is not valid JSON',
      on_arrival: true,
    });
    expect(alert!.text).toContain(`delivery ${d.eventId} (pod.created) is dead on arrival`);
    const { store, close } = openSqliteStore(path);
    expect(await store.get(d.eventId)).toMatchObject({ status: 'dead', attempts: 0 });
    close();

    // A copy from the sender is a duplicate: stored once, alerted once.
    const copy = await fetch(`${server.url}/webhooks`, { method: 'POST', headers: d.headers, body: d.body });
    expect(await copy.json()).toMatchObject({ duplicate: true });
    expect(await stop(server)).toBe(0);
    expect(receiver.raw).toHaveLength(1);
    for (const text of [receiver.raw.join('\n'), server.output()]) expect(text).not.toContain(bodyMarker);
  });

  it('after a start whose last heartbeat is 23 hours old: a downtime alert that the webhook is probably disabled, and a warn line', async () => {
    const receiver = await startAlertReceiver();
    running.push(receiver);
    const path = dbIn(tempDir());
    const lastBeat = Date.now() - 23 * HOUR;
    const seeded = openSqliteStore(path);
    await seeded.store.writeHeartbeat(lastBeat);
    seeded.close();

    const server = await spawnServer({ DATABASE_PATH: path, SVC_WEBHOOK_SECRET: TEST_SECRET, ALERT_WEBHOOK_URL: receiver.url }, { handlers: FAILING });
    running.push(server);
    await vi.waitFor(() => expect(receiver.raw.length, 'a downtime alert').toBeGreaterThan(0), { timeout: 15_000 });
    const [alert] = receiver.alerts();
    expect(alert!.podhook).toMatchObject({
      kind: 'downtime',
      down_from: new Date(lastBeat).toISOString(),
      retry_ladder_minutes: [1, 5, 15, 60, 180, 360, 720],
      probably_disabled: true,
      retries_due_by: null,
    });
    expect(alert!.podhook.down_minutes).toBeGreaterThanOrEqual(23 * 60);
    expect(alert!.text).toMatch(/^podhook was down for 23 h /);
    expect(alert!.text).toContain('disabled_by_us_at');
    expect(alert!.text).toContain('Re-enable it');
    // Past the ladder the alert says what to run to see the pods podhook may have missed.
    expect(alert!.text).toContain('`podhook pods --drift`');
    expect(alert!.podhook.check_command).toBe('podhook pods --drift');

    const warn = server
      .output()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((r) => r.alert === 'downtime');
    expect(warn).toMatchObject({ level: 40, probably_disabled: true, msg: alert!.text });

    expect(await stop(server)).toBe(0);
    // The downtime stays recorded for the inspector; the stop wrote the last heartbeat.
    const { store, close } = openSqliteStore(path);
    const record = await store.readHeartbeat();
    close();
    expect(record!.downtime!.from).toBe(lastBeat);
    expect(record!.beatAt).toBeGreaterThan(record!.downtime!.until - 1);
    expect(server.output()).not.toContain(URL_TOKEN);
  });

  it('sends nothing after a restart within the threshold', async () => {
    const receiver = await startAlertReceiver();
    running.push(receiver);
    const path = dbIn(tempDir());
    const lastBeat = Date.now() - 60_000;
    const seeded = openSqliteStore(path);
    await seeded.store.writeHeartbeat(lastBeat);
    seeded.close();

    const server = await spawnServer({ DATABASE_PATH: path, ALERT_WEBHOOK_URL: receiver.url, ALERT_DOWNTIME_MINUTES: '5' }, { handlers: FAILING });
    running.push(server);
    // The start's heartbeat has been written: the downtime check is done.
    const beatAt = async () => {
      const s = openSqliteStore(path);
      try {
        return (await s.store.readHeartbeat())!.beatAt;
      } finally {
        s.close();
      }
    };
    await vi.waitFor(async () => expect(await beatAt(), 'the start heartbeat').toBeGreaterThan(lastBeat), { timeout: 15_000 });
    expect(await stop(server)).toBe(0);
    expect(receiver.raw).toEqual([]);
    expect(server.output()).not.toMatch(/"alert":"downtime"/);
  });

  it('refuses an http alert URL off loopback at start: exit 2, one line, the URL not echoed', async () => {
    const result = await runCli(['serve'], { DATABASE_PATH: dbIn(tempDir()), ALERT_WEBHOOK_URL: `http://hooks.example.com/${URL_TOKEN}` });
    expect(result.code).toBe(2);
    const lines = result.stderr.trim().split('\n');
    expect(lines).toEqual(['podhook: invalid configuration: ALERT_WEBHOOK_URL may use http:// only for a loopback host (127.0.0.1, ::1, localhost); use https://']);
    expect(result.stderr + result.stdout).not.toContain(URL_TOKEN);
  });
});
