// The admin API of `podhook serve` processes on PostgreSQL (DATABASE_URL): the deliveries list,
// one delivery with its ledger, stats, and a replay run by another replica than the one that
// made the dead letter.
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { AppendedCall } from '../../fixtures/appending-handlers.js';
import { freshDatabaseUrl } from '../../helpers/postgres.js';
import { waitReady } from '../../helpers/replicas.js';
import { signDelivery, TEST_SECRET } from '../../helpers/sign.js';
import { spawnServer, type ServerProcess } from '../../helpers/spawn-podhook.js';
import { useTempDir } from '../../helpers/temp-dir.js';

const APPENDING = fileURLToPath(new URL('../../fixtures/appending-handlers.ts', import.meta.url));
const TOKEN = 'adm_pg_0123456789abcdef0123456789abcdef';
const tempDir = useTempDir('podhook-admin-pg-');
const running: ServerProcess[] = [];

afterEach(async () => {
  for (const s of running.splice(0)) await stop(s);
});

async function stop(s: ServerProcess) {
  if (s.child.exitCode !== null || s.child.signalCode !== null) return;
  const closed = once(s.child, 'close');
  s.child.kill('SIGTERM');
  await closed;
}

async function serve(env: Record<string, string>) {
  const server = await spawnServer({ SVC_WEBHOOK_SECRET: TEST_SECRET, ADMIN_TOKEN: TOKEN, DISPATCH_MAX_ATTEMPTS: '1', DISPATCH_POLL_MS: '100', ...env }, { handlers: APPENDING });
  running.push(server);
  // "listening" comes before PostgreSQL is reached and migrated; until then the API answers 503.
  await waitReady([server.url]);
  return server;
}

const api = (server: ServerProcess, path: string, init: RequestInit = {}) =>
  fetch(`${server.url}/_podhook/api${path}`, { ...init, headers: { authorization: `Bearer ${TOKEN}`, ...(init.headers as Record<string, string>) } });

interface Row {
  event_id: string;
  event_type: string;
  status: string;
  attempts: number;
}

describe('admin API on PostgreSQL', () => {
  it('lists and pages deliveries, answers one with its runs and stats, and a replay is run by a live replica', { timeout: 90_000 }, async () => {
    const dir = tempDir();
    const url = await freshDatabaseUrl();
    const calls = join(dir, 'calls.jsonl');
    const env = { DATABASE_URL: url, RECORD_FILE: calls };
    const failing = await serve({ ...env, FAIL_TYPES: 'pod.backup.failed' });

    const t = Math.floor(Date.now() / 1000);
    const sent = ['pod.created', 'pod.created', 'pod.backup.failed'].map((eventType) => signDelivery({ t, eventType }));
    for (const d of sent) expect((await fetch(`${failing.url}/webhooks`, { method: 'POST', headers: d.headers, body: d.body })).status).toBe(200);
    const statuses = async (server: ServerProcess) => {
      const body = (await (await api(server, '/deliveries?limit=10')).json()) as { deliveries: Row[] };
      return Object.fromEntries(body.deliveries.map((r) => [r.event_id, r.status]));
    };
    const [created1, created2, backup] = sent.map((d) => d.eventId) as [string, string, string];
    await vi.waitFor(async () => expect(await statuses(failing)).toEqual({ [created1]: 'processed', [created2]: 'processed', [backup]: 'dead' }), { timeout: 20_000 });

    // Newest first, two a page, every delivery once.
    const seen: string[] = [];
    let cursor: string | null = '';
    while (cursor !== null) {
      const res = await api(failing, `/deliveries?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      expect(res.status).toBe(200);
      const page = (await res.json()) as { deliveries: Row[]; next_cursor: string | null };
      seen.push(...page.deliveries.map((r) => r.event_id));
      cursor = page.next_cursor;
    }
    expect(seen.sort()).toEqual([created1, created2, backup].sort());
    const dead = (await (await api(failing, '/deliveries?status=dead')).json()) as { deliveries: Row[] };
    expect(dead.deliveries.map((r) => r.event_id)).toEqual([backup]);

    const stats = (await (await api(failing, '/stats')).json()) as { dead_letters: number };
    expect(stats.dead_letters).toBe(1);

    // The replica that failed stops; another one (handlers fixed) runs the replay.
    await stop(failing);
    const live = await serve(env);
    const replay = await api(live, '/replay', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ event_ids: [backup] }) });
    expect(await replay.json()).toEqual({ replayed: 1 });
    await vi.waitFor(async () => expect((await statuses(live))[backup]).toBe('processed'), { timeout: 20_000 });
    const record = (await (await api(live, `/deliveries/${backup}`)).json()) as {
      attempts: number;
      runs: { handler: string; attempt: number; outcome: string; replica: string | null }[];
    };
    expect(record.attempts).toBe(2);
    // Every run, oldest first, each with the replica that ran it: the failing one, then the live one.
    expect(record.runs).toMatchObject([
      { handler: 'appendAll', attempt: 1, outcome: 'failed', error: 'Error: appendAll refuses pod.backup.failed' },
      { handler: 'appendBackups', attempt: 1, outcome: 'failed', error: 'Error: appendBackups refuses pod.backup.failed' },
      { handler: 'appendAll', attempt: 2, outcome: 'succeeded' },
      { handler: 'appendBackups', attempt: 2, outcome: 'succeeded' },
    ]);
    const [first, , again] = record.runs;
    expect(first!.replica).toBeTruthy();
    expect(again!.replica).toBeTruthy();
    expect(again!.replica).not.toBe(first!.replica);
    expect(record.runs[1]!.replica).toBe(first!.replica);
    const ran = readFileSync(calls, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as AppendedCall);
    // Each handler ran once per attempt: the created ones once, the backup twice (failed, then replayed).
    expect(ran.filter((c) => c.id === backup).map((c) => `${c.handler}#${c.attempt}`).sort()).toEqual(['appendAll#1', 'appendAll#2', 'appendBackups#1', 'appendBackups#2']);
    expect(ran.filter((c) => c.id !== backup).map((c) => c.id).sort()).toEqual([created1, created2].sort());
  });
});
