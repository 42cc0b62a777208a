import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, vi } from 'vitest';
import { silentLogger } from '../../src/core/observability/logger.js';
import { parseConfig } from '../../src/core/config.js';
import { startServer } from '../../src/node/serve.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { handlers, recordedCalls, resetRecording } from '../fixtures/recording-handlers.js';
import { RECORDING_REGISTRY } from '../fixtures/registry-paths.js';
import { signDelivery, TEST_SECRET, type SignedDelivery } from '../helpers/sign.js';
import { runCli, spawnServer } from '../helpers/spawn-podhook.js';
import { dbIn, useTempDir } from '../helpers/temp-dir.js';
import { runMain } from './run-main.js';

const tempDir = useTempDir();
const HANDLERS = RECORDING_REGISTRY;
const nowS = () => Math.floor(Date.now() / 1000);
const post = (url: string, d: SignedDelivery) => fetch(`${url}/webhooks`, { method: 'POST', headers: d.headers, body: d.body });
const byIdAndHandler = <T extends { id: string; handler: string }>(calls: T[]) =>
  [...calls].sort((a, b) => `${a.id}/${a.handler}`.localeCompare(`${b.id}/${b.handler}`));

/** Rows of a database, oldest first. */
async function rowsOf(path: string) {
  const { store, close } = openSqliteStore(path);
  try {
    // The last attempt's duration and the replica that ran it are local run data, like the ledger:
    // an import does not bring them.
    return (await store.list({ limit: 1000 })).reverse().map(({ durationMs: _, ranBy: __, ...row }) => row);
  } finally {
    close();
  }
}

describe('capture, export, import and replay on another database', () => {
  it('gives the same handler calls as the live dispatch, every byte unchanged', async () => {
    resetRecording();
    const source = dbIn(tempDir());
    const target = dbIn(tempDir());
    const file = join(tempDir(), 'deliveries.jsonl');
    const config = parseConfig({ DATABASE_PATH: source, SVC_WEBHOOK_SECRET: TEST_SECRET, PORT: '0', HOST: '127.0.0.1' });
    const server = await startServer({ config, logger: silentLogger, handlers });
    const t = nowS();
    const created = signDelivery({ t, eventType: 'pod.created' });
    // Bytes a re-serialisation would change: non-ASCII, an escape, "1.50", trailing whitespace.
    const backup = signDelivery({ t, eventType: 'pod.backup.failed', body: '{"pod":{"id":"p1"},"note":"café ☃ 🚀 \\u00e9","n":1.50}  \n' });
    const notUtf8 = signDelivery({ t, eventType: 'pod.expiring', body: new Uint8Array([0x7b, 0x22, 0x61, 0x22, 0x3a, 0xff, 0xfe, 0x7d]) });
    const unknown = signDelivery({ t, eventType: 'pod.migrated' });
    try {
      for (const d of [created, backup, notUtf8, unknown]) expect((await post(server.url, d)).status).toBe(200);
      await vi.waitFor(async () => expect((await server.runtime.store.list({ status: 'queued' })), 'dispatched').toHaveLength(0), { timeout: 5000 });
    } finally {
      await server.close(100);
    }
    const live = recordedCalls();
    expect(live.map((c) => `${c.type}/${c.handler}`).sort()).toEqual(['pod.backup.failed/recordAll', 'pod.backup.failed/recordBackups', 'pod.created/recordAll']);

    const exported = await runMain(['export', '--out', file], { DATABASE_PATH: source });
    expect(exported).toMatchObject({ code: 0, stderr: `Exported 4 deliveries to ${file}.\n` });
    expect(readFileSync(file, 'utf8').trim().split('\n')).toHaveLength(4);
    const imported = await runMain(['import', file], { DATABASE_PATH: target });
    expect(imported.code).toBe(0);
    expect(imported.stdout).toContain('4 new, 0 already stored (skipped), 0 conflicts');

    // Every row arrives as it was: bytes, headers, signature t, status, counts and times.
    const sourceRows = await rowsOf(source);
    expect(await rowsOf(target)).toEqual(sourceRows);
    expect(Array.from(sourceRows.find((r) => r.eventId === notUtf8.eventId)!.body)).toEqual(Array.from(notUtf8.body));
    expect(Buffer.from(sourceRows.find((r) => r.eventId === backup.eventId)!.body).equals(Buffer.from(backup.body))).toBe(true);

    resetRecording();
    const replayed = await runMain(['replay', '--status', 'processed', '--handlers', HANDLERS], { DATABASE_PATH: target });
    expect(replayed.code).toBe(0);
    expect(replayed.stdout).toContain('Replay: 2 deliveries: 2 succeeded, 0 failed, 0 skipped, 0 busy (3 handler runs).');
    // The same calls: id, type, signature t, received time, payload and raw bytes. Only the
    // attempt differs: a replay is the handler's second run of the event.
    const withoutAttempt = (calls: ReturnType<typeof recordedCalls>) => byIdAndHandler(calls).map(({ attempt, ...call }) => call);
    expect(withoutAttempt(recordedCalls())).toEqual(withoutAttempt(live));
    expect(live.every((c) => c.attempt === 1) && recordedCalls().every((c) => c.attempt === 2)).toBe(true);

    // The body that is not UTF-8 was dead on arrival; replayed here it still cannot reach a handler.
    const dead = await runMain(['replay', notUtf8.eventId, '--handlers', HANDLERS], { DATABASE_PATH: target });
    expect(dead.code).toBe(1);
    expect(dead.stdout).toMatch(new RegExp(`${notUtf8.eventId}  pod.expiring +dead +FAILED, not run: invalid_json`));

    // Importing the same file again changes nothing.
    const again = await runMain(['import', file], { DATABASE_PATH: target });
    expect(again.stdout).toContain('0 new, 4 already stored (skipped), 0 conflicts');
    expect((await rowsOf(target)).map((r) => r.deliveryCount)).toEqual(sourceRows.map((r) => r.deliveryCount));
  });

  it('works as the README shows: capture with `podhook serve`, then export, import and replay, one command each', async () => {
    const machineA = dbIn(tempDir());
    const machineB = dbIn(tempDir());
    const file = join(tempDir(), 'capture.jsonl');
    const server = await spawnServer({ DATABASE_PATH: machineA, SVC_WEBHOOK_SECRET: TEST_SECRET });
    const sent = [signDelivery({ t: nowS(), eventType: 'pod.created' }), signDelivery({ t: nowS(), eventType: 'pod.backup.failed' })];
    try {
      for (const d of sent) expect((await post(server.url, d)).status).toBe(200);
      await vi.waitFor(async () => expect((await rowsOf(machineA)).every((r) => r.status === 'processed'), 'processed').toBe(true), { timeout: 10_000 });
    } finally {
      server.child.kill('SIGTERM');
      await once(server.child, 'exit');
    }

    expect((await runCli(['export', '--out', file], { DATABASE_PATH: machineA })).code).toBe(0);
    expect((await runCli(['import', file], { DATABASE_PATH: machineB })).code).toBe(0);
    const replay = await runCli(['replay', '--status', 'processed', '--handlers', HANDLERS], { DATABASE_PATH: machineB });
    expect(replay.code).toBe(0);
    // stdout: the report; stderr: the fixture handlers' own JSON log lines.
    expect(replay.stdout).toContain('2 succeeded, 0 failed');
    const logs = replay.stderr.split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
    const runs = logs.filter((l) => l.msg === 'handler run');
    expect(runs.map((r) => [r.event_id, r.handler, r.outcome]).sort()).toEqual(
      [
        [sent[0]!.eventId, 'recordAll', 'succeeded'],
        [sent[1]!.eventId, 'recordAll', 'succeeded'],
        [sent[1]!.eventId, 'recordBackups', 'succeeded'],
      ].sort(),
    );
    expect(logs.some((l) => l.msg === 'recorded' && l.event_id === sent[0]!.eventId)).toBe(true);
  });

  it('carries the largest body the receiver accepts (16 MiB) through export, import, schemas --from, send and replay', { timeout: 120_000 }, async () => {
    resetRecording();
    const MAX = 16 * 1024 * 1024;
    const head = '{"pod":{"id":"p-16mib","name":"café"},"pad":"';
    const text = head + 'x'.repeat(MAX - Buffer.byteLength(head) - 2) + '"}';
    const big = signDelivery({ t: nowS(), eventType: 'pod.created', body: text });
    expect(big.body.byteLength).toBe(MAX);
    const env = { SVC_WEBHOOK_SECRET: TEST_SECRET, PORT: '0', HOST: '127.0.0.1', MAX_BODY_BYTES: String(MAX) };
    const source = dbIn(tempDir());
    const file = join(tempDir(), 'big.jsonl');
    const a = await startServer({ config: parseConfig({ ...env, DATABASE_PATH: source }), logger: silentLogger, handlers });
    try {
      expect((await post(a.url, big)).status).toBe(200);
      await vi.waitFor(async () => expect((await a.runtime.store.get(big.eventId))?.status).toBe('processed'), { timeout: 20_000 });
    } finally {
      await a.close(100);
    }

    expect(await runMain(['export', '--out', file], { DATABASE_PATH: source })).toMatchObject({ code: 0, stderr: `Exported 1 delivery to ${file}.\n` });
    const target = dbIn(tempDir());
    const imported = await runMain(['import', file], { DATABASE_PATH: target });
    expect(imported.code, imported.stderr).toBe(0);
    expect(imported.stdout).toContain('1 new, 0 already stored (skipped), 0 conflicts');
    const [row] = await rowsOf(target);
    expect(Buffer.from(row!.body).equals(Buffer.from(big.body))).toBe(true);

    const schemas = await runMain(['schemas', '--from', file, '--json'], {});
    expect(schemas.code, schemas.stderr).toBe(0);
    expect(schemas.stderr).toContain('Read 1 delivery: 1 sample of 1 event type.');

    const receiver = dbIn(tempDir());
    const b = await startServer({ config: parseConfig({ ...env, DATABASE_PATH: receiver, DISPATCHER: 'off' }), logger: silentLogger, handlers });
    try {
      const sent = await runMain(['send', '--to', `${b.url}/webhooks`, file], { SVC_WEBHOOK_SECRET: TEST_SECRET });
      expect(sent.code, sent.stderr).toBe(0);
      expect(Buffer.from((await b.runtime.store.get(big.eventId))!.body).equals(Buffer.from(big.body))).toBe(true);
    } finally {
      await b.close(100);
    }

    resetRecording();
    const replayed = await runMain(['replay', big.eventId, '--handlers', HANDLERS], { DATABASE_PATH: target });
    expect(replayed.code, replayed.stdout).toBe(0);
    const [call] = recordedCalls();
    expect(call).toMatchObject({ id: big.eventId, handler: 'recordAll', payload: { pod: { id: 'p-16mib', name: 'café' } } });
    expect(call!.rawBody.length).toBe(MAX * 2);
  });
});
