// The `podhook listen` scenario run against each kind of remote (Node, Worker): deliver, listen
// --once, deliver while stopped, listen live, deliver while live, stop, deliver, listen again.
// Every delivery must end up stored here exactly once and processed by the local handlers,
// body byte-exact, and the remote must be left as it was.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, vi } from 'vitest';
import { bytesToBase64 } from '../../src/core/transfer/base64.js';
import { DELIVERY_EXPORT_FORMAT, type ExportRecord } from '../../src/core/transfer/delivery-export.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { AppendedCall } from '../fixtures/appending-handlers.js';
import { ADMIN_TOKEN, type RemotePodhook } from '../helpers/remote-podhook.js';
import { signDelivery } from '../helpers/sign.js';
import { podhookArgs, runCli } from '../helpers/spawn-podhook.js';
import { useTempDir } from '../helpers/temp-dir.js';

export const HANDLERS = fileURLToPath(new URL('../fixtures/appending-handlers.ts', import.meta.url));
const nowS = () => Math.floor(Date.now() / 1000);

/** Two deliveries stored remotely before the test, ten minutes ago: one processed there, one dead. */
export function seedRecords(): ExportRecord[] {
  const at = Date.now() - 10 * 60_000;
  const record = (type: string, status: ExportRecord['status'], attempts: number, body: string): ExportRecord => ({
    format: DELIVERY_EXPORT_FORMAT,
    event_id: crypto.randomUUID(),
    event_type: type,
    signature_t: Math.floor(at / 1000),
    received_at: new Date(at).toISOString(),
    last_received_at: new Date(at).toISOString(),
    delivery_count: 1,
    status,
    attempts,
    last_error: status === 'dead' ? 'remoteHandler: boom' : null,
    next_attempt_at: null,
    processed_at: status === 'processed' ? new Date(at + 50).toISOString() : null,
    headers: { 'content-type': 'application/json' },
    body_base64: bytesToBase64(new TextEncoder().encode(body)),
  });
  return [
    record('pod.created', 'processed', 1, '{"pod":{"id":"seed-1","name":"seeded","status":"provisioning"}}'),
    record('pod.backup.failed', 'dead', 8, '{"pod":{"id":"seed-2","name":"seeded"},"backup":{"id":"b1","error":"disk"}}'),
  ];
}

export function describeListenScenario(name: string, startRemote: (dir: string, seed: readonly ExportRecord[]) => Promise<RemotePodhook>) {
  const tempDir = useTempDir('podhook-listen-');

  describe(`podhook listen from ${name}`, () => {
    it('stores every delivery here exactly once and runs the local handlers on it; the remote is left as it was', { timeout: 180_000 }, async () => {
      const dir = tempDir();
      const seed = seedRecords();
      const remote = await startRemote(dir, seed);
      const env = { DATABASE_PATH: join(dir, 'local.db'), PODHOOK_ADMIN_TOKEN: ADMIN_TOKEN, RECORD_FILE: join(dir, 'calls.jsonl'), LOG_LEVEL: 'warn' };
      const outputs: string[] = [];
      const listenOnce = async (args: string[] = []) => {
        const r = await runCli(['listen', '--from', remote.url, '--handlers', HANDLERS, '--once', ...args], env);
        outputs.push(r.stdout, r.stderr);
        return r;
      };
      const deliver = async (eventType: string, body: string | Uint8Array) => {
        const d = signDelivery({ t: nowS(), eventType, body });
        const res = await fetch(`${remote.url}/webhooks`, { method: 'POST', headers: d.headers, body: d.body });
        expect(res.status).toBe(200);
        // The row as the remote stored it, before any listen could have read it.
        stored.push(...(await remoteRows(remote.url)).filter((r) => r.event_id === d.eventId));
        return { id: d.eventId, type: eventType, body: Buffer.from(d.body).toString('hex') };
      };
      const stored: Array<Record<string, unknown>> = [];
      const calls = (): AppendedCall[] =>
        existsSync(env.RECORD_FILE) ? readFileSync(env.RECORD_FILE, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as AppendedCall) : [];
      try {
        // Odd spacing and non-ASCII text: what is stored and handed over must be these bytes.
        const delivered = [
          await deliver('pod.created', '{"pod":  {"id":"p1","name":"café","status":"provisioning"}}'),
          await deliver('pod.backup.completed', '{ "pod":{"id":"p1","name":"x"},\n "backup":{"id":"b-1","size_bytes":1} }'),
        ];
        const remoteBefore = await remoteRows(remote.url);
        expect(remoteBefore.map((r) => r.status).sort()).toEqual(['dead', 'processed', ...stored.map((r) => r.status as string)].sort());

        // The Worker's export holds back the last seconds' deliveries: --once reads what is there.
        await exported(remote.url, delivered);
        const first = await listenOnce(['--since', '1h']);
        expect(first.code, first.stderr).toBe(0);
        const seeded = seed.map((r) => ({ id: r.event_id, type: r.event_type, body: Buffer.from(r.body_base64, 'base64').toString('hex') }));
        for (const d of [...seeded, ...delivered]) expect(first.stdout).toMatch(new RegExp(`${d.type}\\s+${d.id}  processed \\(appendAll`));

        // Stopped: this one waits on the remote until the next listen.
        delivered.push(await deliver('pod.destroyed', '{"pod":{"id":"p2","name":"gone"}}'));
        const live = spawn(process.execPath, podhookArgs(['listen', '--from', remote.url, '--handlers', HANDLERS]), {
          env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let liveOut = '';
        live.stdout.on('data', (c) => (liveOut += c));
        live.stderr.on('data', (c) => (liveOut += c));
        try {
          await vi.waitFor(() => expect(calls().map((c) => c.id)).toContain(delivered[2]!.id), { timeout: 30_000, interval: 100 });
          // Live: a delivery stored remotely now reaches the local handler without a restart.
          delivered.push(await deliver('pod.backup.failed', '{"pod":{"id":"p3","name":"live"},"backup":{"id":"b-2","error":"quota"}}'));
          await vi.waitFor(() => expect(calls().map((c) => c.id)).toContain(delivered[3]!.id), { timeout: 30_000, interval: 100 });
          await vi.waitFor(() => expect(liveOut).toContain(`${delivered[3]!.id}  processed (appendAll, appendBackups)`), { timeout: 10_000 });
        } finally {
          live.kill('SIGINT');
          const [code] = (await once(live, 'close')) as [number | null];
          outputs.push(liveOut);
          expect(code, liveOut).toBe(0);
        }

        // Stopped again: the next listen starts where this one left off (no --since needed).
        delivered.push(await deliver('pod.created', '{"pod":{"id":"p4","name":"late","status":"provisioning"}}'));
        await exported(remote.url, delivered);
        const last = await listenOnce();
        expect(last.code, last.stderr).toBe(0);
        expect(last.stdout).toContain(delivered[4]!.id);
        expect(last.stdout.trim().split('\n')).toHaveLength(1);

        // Here: each delivery once, queued on arrival and processed by the local handlers.
        const all = [...seeded, ...delivered];
        const local = openSqliteStore(env.DATABASE_PATH);
        try {
          const rows = await local.store.scan({ limit: 100 });
          expect(rows.map((r) => r.eventId).sort()).toEqual(all.map((d) => d.id).sort());
          for (const d of all) {
            const row = rows.find((r) => r.eventId === d.id)!;
            expect(row).toMatchObject({ eventType: d.type, status: 'processed', attempts: 1 });
            expect(Buffer.from(row.body).toString('hex')).toBe(d.body);
          }
        } finally {
          local.close();
        }
        const made = calls();
        for (const d of all) {
          const expected = d.type.startsWith('pod.backup.') ? ['appendAll', 'appendBackups'] : ['appendAll'];
          const mine = made.filter((c) => c.id === d.id);
          expect(mine.map((c) => c.handler).sort()).toEqual(expected);
          for (const c of mine) expect(c).toMatchObject({ type: d.type, rawBody: d.body, attempt: 1 });
        }
        expect(made).toHaveLength(all.reduce((n, d) => n + (d.type.startsWith('pod.backup.') ? 2 : 1), 0));

        // There: every row exactly as it was stored, statuses and counts included (the remote's
        // dispatcher is off, so only a listen could have changed one).
        const remoteAfter = await remoteRows(remote.url);
        expect(remoteAfter.filter((r) => remoteBefore.some((b) => b.event_id === r.event_id))).toEqual(remoteBefore);
        expect(remoteAfter.filter((r) => stored.some((b) => b.event_id === r.event_id))).toEqual(stored);
        expect(remoteAfter.map((r) => r.event_id).sort()).toEqual(all.map((d) => d.id).sort());

        for (const text of [...outputs, remote.output()]) expect(text).not.toContain(ADMIN_TOKEN);
      } finally {
        await remote.close();
      }
    });
  });
}

/** Waits until the remote's export offers these deliveries (at once on Node; after its settle time on the Worker). */
async function exported(url: string, deliveries: ReadonlyArray<{ id: string }>): Promise<void> {
  const since = new Date(Date.now() - 3_600_000).toISOString();
  await vi.waitFor(
    async () => {
      const res = await fetch(`${url}/_podhook/api/export?since=${since}&limit=1000`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
      const text = await res.text();
      for (const d of deliveries) expect(text).toContain(d.id);
    },
    { timeout: 30_000, interval: 100 },
  );
}

/** The remote's rows as its admin API lists them, oldest first. */
async function remoteRows(url: string): Promise<Array<Record<string, unknown>>> {
  const res = await fetch(`${url}/_podhook/api/deliveries?order=asc&limit=500`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  expect(res.status).toBe(200);
  return ((await res.json()) as { deliveries: Array<Record<string, unknown>> }).deliveries;
}
