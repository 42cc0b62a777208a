import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { openPostgres } from '../../src/store/postgres/open-postgres.js';
import { createPostgresStore } from '../../src/store/postgres/open-postgres.js';
import type { FencingRecord } from '../fixtures/fencing-handlers.js';
import { freshDatabaseUrl } from '../helpers/postgres.js';
import { signDelivery, TEST_SECRET } from '../helpers/sign.js';
import { spawnServer, type ServerProcess } from '../helpers/spawn-podhook.js';
import { useTempDir } from '../helpers/temp-dir.js';

const FENCING = fileURLToPath(new URL('../fixtures/fencing-handlers.ts', import.meta.url));
const tempDir = useTempDir();
const running: ServerProcess[] = [];
const cleanups: (() => Promise<unknown>)[] = [];

afterEach(async () => {
  for (const s of running.splice(0)) {
    if (s.child.exitCode === null && s.child.signalCode === null) {
      s.child.kill('SIGCONT');
      s.child.kill('SIGKILL');
      await once(s.child, 'close');
    }
  }
  for (const c of cleanups.splice(0)) await c();
});

async function serve(env: Record<string, string>) {
  const server = await spawnServer({ SVC_WEBHOOK_SECRET: TEST_SECRET, DISPATCH_POLL_MS: '50', LEASE_MS: '1500', ...env }, { handlers: FENCING });
  running.push(server);
  await vi.waitFor(async () => expect((await fetch(`${server.url}/readyz`)).status).toBe(200), { timeout: 15_000 });
  return server;
}

const records = (file: string): FencingRecord[] =>
  existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as FencingRecord) : [];

describe('fencing by claim id across replicas (PostgreSQL)', () => {
  it('a replica paused with SIGSTOP past its lease mid-handler, then resumed, records no outcome over the replica that took the work over', async () => {
    const url = await freshDatabaseUrl();
    const file = join(tempDir(), 'runs.jsonl');
    // The paused replica's handler would fail the delivery: were its outcome recorded, the row would say `failed`.
    const paused = await serve({ DATABASE_URL: url, RECORD_FILE: file, HANDLER_SLEEP_MS: '4000', HANDLER_FAILS: '1' });
    const live = await serve({ DATABASE_URL: url, RECORD_FILE: file, HANDLER_SLEEP_MS: '0' });
    const pid = (s: ServerProcess) => s.child.pid!;

    const d = signDelivery({ t: Math.floor(Date.now() / 1000) });
    const answer = await fetch(`${paused.url}/webhooks`, { method: 'POST', headers: d.headers, body: d.body });
    expect(answer.status).toBe(200);
    // Handed off to the replica that stored it: its handler starts there.
    await vi.waitFor(() => expect(records(file)).toMatchObject([{ pid: pid(paused), id: d.eventId, phase: 'start' }]), { timeout: 10_000 });
    paused.child.kill('SIGSTOP');

    const opened = openPostgres(url);
    cleanups.push(() => opened.close());
    const store = createPostgresStore(opened.db);
    // Its lease runs out unrenewed; the live replica leases the delivery under its own claim and runs it.
    await vi.waitFor(async () => expect(await store.get(d.eventId)).toMatchObject({ status: 'processed', attempts: 1, lastError: null }), { timeout: 20_000, interval: 100 });
    expect(records(file).filter((r) => r.pid === pid(live)).map((r) => r.phase)).toEqual(['start', 'end']);

    paused.child.kill('SIGCONT');
    // Resumed, its handler call ends (aborted at its next renewal, or done and failing).
    await vi.waitFor(() => expect(paused.output()).toContain('"msg":"handler run"'), { timeout: 15_000 });
    // The operator sees it on /metrics (renewal found the lease taken, or the outcome write was fenced).
    await vi.waitFor(async () => expect(await (await fetch(`${paused.url}/metrics`)).text()).toMatch(/podhook_leases_lost_total\{reason="(taken_over|outcome_fenced)"\} 1/), { timeout: 10_000 });
    // A graceful stop waits for its in-flight outcome writes, so any write it would make is made by now.
    paused.child.kill('SIGTERM');
    await once(paused.child, 'close');

    expect(await store.get(d.eventId)).toMatchObject({ status: 'processed', attempts: 1, lastError: null, deliveryCount: 1 });
    // No ledger run of the stale attempt either (a first-attempt success writes none).
    expect(await store.handlerRuns([d.eventId])).toEqual([]);
    // It says why: the lease was lost (at its renewal, or when its outcome write matched no claim).
    expect(paused.output()).toContain('lease lost');
    expect(paused.output()).not.toContain('"delivery will retry"');
    expect(live.output()).not.toContain('lease lost');
  }, 60_000);
});
