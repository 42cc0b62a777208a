import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { createDispatcher } from '../../src/core/dispatch/dispatcher.js';
import { silentLogger } from '../../src/core/observability/logger.js';
import { createRouter } from '../../src/core/dispatch/router.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { failHandler, handlers, recordedCalls, resetRecording } from '../fixtures/recording-handlers.js';
import { openNodeTarget } from '../helpers/node-target.js';
import { FIXED_NOW_MS, signDelivery, TEST_SECRET, toRequest } from '../helpers/sign.js';
import { dbIn, useTempDir } from '../helpers/temp-dir.js';
import { runMain } from './run-main.js';

const tempDir = useTempDir();
const HANDLERS = fileURLToPath(new URL('../fixtures/recording-handlers.ts', import.meta.url));
const HOUR = 3_600_000;
afterEach(() => resetRecording());

/**
 * A database holding these deliveries, received an hour apart through the real receiver and
 * dispatched once by the real dispatcher (one attempt: a handler failing then makes it dead).
 */
async function seed(types: string[], { failing = [] as string[] } = {}) {
  const target = openNodeTarget(tempDir(), { secrets: [TEST_SECRET] });
  const ids: string[] = [];
  for (const [i, eventType] of types.entries()) {
    const at = FIXED_NOW_MS + i * HOUR;
    target.setNow(at);
    const d = signDelivery({ eventType, t: Math.floor(at / 1000) });
    expect((await target.fetch(toRequest(d))).status).toBe(200);
    ids.push(d.eventId);
  }
  failing.forEach(failHandler);
  const dispatcher = createDispatcher({ store: target.store, router: createRouter(handlers), logger: silentLogger, maxAttempts: 1, clock: () => FIXED_NOW_MS + 10 * HOUR });
  await dispatcher.runUntilIdle();
  resetRecording();
  await target.close();
  return { path: target.databasePath, ids, env: { DATABASE_PATH: target.databasePath } };
}

async function inspect(path: string, ids: string[]) {
  const { store, close } = openSqliteStore(path);
  try {
    const rows = await Promise.all(ids.map((id) => store.get(id)));
    const ledger = await store.handlerRuns(ids);
    return { rows: rows.map((r) => r!), ledger: (id: string) => ledger.filter((r) => r.eventId === id).map((r) => `${r.handler}:${r.status}:${r.attempts}`).sort() };
  } finally {
    close();
  }
}

const replay = (args: string[], env: Record<string, string>) => runMain(['replay', ...args, '--handlers', HANDLERS], env);
const calls = () => recordedCalls().map((c) => `${c.id}/${c.handler}/${c.attempt}`).sort();

describe('podhook replay', () => {
  it('--status dead runs the handlers again on dead letters only, and a success makes them processed', async () => {
    const db = await seed(['pod.created', 'pod.backup.failed', 'pod.backup.completed'], { failing: ['recordBackups'] });
    const [ok, failedBackup, completedBackup] = db.ids as [string, string, string];
    const before = await inspect(db.path, db.ids);
    expect(before.rows.map((r) => r.status)).toEqual(['processed', 'dead', 'dead']);

    const result = await replay(['--status', 'dead'], db.env);
    expect(result.code).toBe(0);
    // Both handlers run again, including recordAll, which had succeeded: attempts follow the ledger.
    expect(calls()).toEqual(
      [`${failedBackup}/recordAll/2`, `${failedBackup}/recordBackups/2`, `${completedBackup}/recordAll/2`, `${completedBackup}/recordBackups/2`].sort(),
    );
    expect(result.stdout).toContain(`${failedBackup}  pod.backup.failed     dead       succeeded (recordAll, recordBackups) → processed`);
    expect(result.stdout).toContain('Replay: 2 deliveries: 2 succeeded, 0 failed, 0 skipped, 0 busy (4 handler runs).');
    const after = await inspect(db.path, db.ids);
    expect(after.rows.map((r) => [r.status, r.attempts, r.lastError])).toEqual([
      ['processed', 1, null],
      ['processed', 2, null],
      ['processed', 2, null],
    ]);
    expect(after.rows[0]).toEqual(before.rows[0]); // not selected, not touched
    expect(after.ledger(failedBackup)).toEqual(['recordAll:succeeded:2', 'recordBackups:succeeded:2']);
    expect(after.ledger(ok)).toEqual([]); // processed at its first attempt: no ledger rows
  });

  it('--type and --since select by type and received time, oldest first', async () => {
    const db = await seed(['pod.created', 'pod.active', 'pod.created', 'pod.created']);
    const since = new Date(FIXED_NOW_MS + 1.5 * HOUR).toISOString();
    const result = await replay(['--type', 'pod.created', '--since', since], db.env);
    expect(result.code).toBe(0);
    expect(calls()).toEqual([`${db.ids[2]}/recordAll/2`, `${db.ids[3]}/recordAll/2`].sort());
    const lines = result.stdout.split('\n').filter((l) => l.includes('succeeded ('));
    expect(lines.map((l) => l.slice(0, 36))).toEqual([db.ids[2], db.ids[3]]);

    resetRecording();
    expect((await replay(['--type', 'pod.destroyed'], db.env)).stdout).toBe('No deliveries match.\n');
    expect(calls()).toEqual([]);
  });

  it('--dry-run says what would run and runs and writes nothing', async () => {
    const db = await seed(['pod.backup.failed', 'pod.migrated'], { failing: ['recordBackups'] });
    const before = await inspect(db.path, db.ids);
    const result = await replay(['--since', new Date(FIXED_NOW_MS).toISOString(), '--dry-run'], db.env);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`${db.ids[0]}  pod.backup.failed     dead       would run recordAll, recordBackups`);
    expect(result.stdout).toContain('Dry run: 2 deliveries: 2 would be replayed (3 handler runs), 0 skipped.');
    expect(calls()).toEqual([]);
    const after = await inspect(db.path, db.ids);
    expect(after.rows).toEqual(before.rows);
    expect(after.ledger(db.ids[0]!)).toEqual(before.ledger(db.ids[0]!));
  });

  it('--handler runs one handler only; the delivery stays dead while another handler has a failure on record', async () => {
    const db = await seed(['pod.backup.failed', 'pod.created'], { failing: ['recordBackups'] });
    const [backup, created] = db.ids as [string, string];

    const first = await replay([backup, created, '--handler', 'recordAll'], db.env);
    expect(first.code).toBe(0);
    expect(calls()).toEqual([`${backup}/recordAll/2`, `${created}/recordAll/2`].sort());
    let state = await inspect(db.path, db.ids);
    expect(state.rows[0]).toMatchObject({ status: 'dead', lastError: 'recordBackups: Error: recordBackups is broken' });
    expect(state.ledger(backup)).toEqual(['recordAll:succeeded:2', 'recordBackups:failed:1']);

    resetRecording();
    const second = await replay([backup, created, '--handler', 'recordBackups'], db.env);
    expect(second.code).toBe(0);
    expect(calls()).toEqual([`${backup}/recordBackups/2`]);
    expect(second.stdout).toContain(`${created}  pod.created           processed  skipped: handler "recordBackups" does not take pod.created`);
    state = await inspect(db.path, db.ids);
    expect(state.rows[0]).toMatchObject({ status: 'processed', lastError: null });
  });

  it('exits 1 when a handler fails, recording the delivery as dead with the error', async () => {
    const db = await seed(['pod.backup.completed', 'pod.created']);
    failHandler('recordBackups');
    const result = await replay(db.ids, db.env);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(`${db.ids[0]}  pod.backup.completed  processed  FAILED → dead: recordBackups: Error: recordBackups is broken`);
    expect(result.stdout).toContain('Replay: 2 deliveries: 1 succeeded, 1 failed, 0 skipped, 0 busy (3 handler runs).');
    const state = await inspect(db.path, db.ids);
    expect(state.rows.map((r) => r.status)).toEqual(['dead', 'processed']);
    // The handler's own log line reaches stderr as JSON.
    const logs = result.stderr.split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(logs.find((l) => l.msg === 'handler run' && l.handler === 'recordBackups')).toMatchObject({ outcome: 'failed', event_id: db.ids[0] });
  });

  it('leaves alone a delivery a running dispatcher holds, and says it was busy', async () => {
    const db = await seed(['pod.created']);
    const { store, close } = openSqliteStore(db.path);
    await store.leaseEvents({ eventIds: db.ids, owner: 'live-dispatcher', now: Date.now(), leaseMs: 60_000 });
    close();
    const result = await replay(db.ids, db.env);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('busy: a running podhook is dispatching it');
    expect(calls()).toEqual([]);
  });

  it('refuses bad usage with exit 2, and reports a missing id or database with exit 1', async () => {
    const db = await seed(['pod.created']);
    const usage = [[], [db.ids[0]!, '--status', 'dead'], ['--status', 'gone'], ['--since', 'yesterday'], ['--type', 'pod.created', '--handler', 'nobody']];
    for (const args of usage) {
      const r = await replay(args, db.env);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(/^podhook replay: .+ \(see podhook replay --help\)\n$/);
    }
    const missing = await replay(['00000000-0000-4000-8000-000000000000'], db.env);
    expect(missing).toMatchObject({ code: 1, stdout: expect.stringContaining('00000000-0000-4000-8000-000000000000  not found') });
    const noDb = await replay(['--status', 'dead'], { DATABASE_PATH: dbIn(tempDir()) });
    expect(noDb.code).toBe(1);
    expect(noDb.stderr).toContain('no database at');
    expect(calls()).toEqual([]);
  });
});

describe('quarantined deliveries', () => {
  it('are listed by `deliveries --status quarantined`, never dispatched, and `replay <id>` runs them', async () => {
    const target = openNodeTarget(tempDir(), { secrets: [TEST_SECRET] });
    target.setNow(FIXED_NOW_MS);
    const first = signDelivery();
    await target.fetch(toRequest(first));
    const conflicting = { ...first, headers: { ...first.headers, 'x-svc-event-id': '0b7c53b2-2f1e-4c1a-9d3e-6a5f4e3d2c1b' } };
    expect(await (await target.fetch(toRequest(conflicting))).json()).toMatchObject({ conflict: true });
    const dispatcher = createDispatcher({ store: target.store, router: createRouter(handlers), logger: silentLogger, clock: () => FIXED_NOW_MS + HOUR });
    await dispatcher.runUntilIdle();
    expect(calls()).toEqual([`${first.eventId}/recordAll/1`]);
    resetRecording();
    await target.close();
    const env = { DATABASE_PATH: target.databasePath };

    const listed = await runMain(['deliveries', '--status', 'quarantined', '--json'], env);
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout)).toEqual([
      expect.objectContaining({ event_id: '0b7c53b2-2f1e-4c1a-9d3e-6a5f4e3d2c1b', status: 'quarantined', conflict_with: first.eventId }),
    ]);

    const result = await replay(['0b7c53b2-2f1e-4c1a-9d3e-6a5f4e3d2c1b'], env);
    expect(result.code).toBe(0);
    expect(calls()).toEqual(['0b7c53b2-2f1e-4c1a-9d3e-6a5f4e3d2c1b/recordAll/1']);
    const after = await inspect(target.databasePath, ['0b7c53b2-2f1e-4c1a-9d3e-6a5f4e3d2c1b']);
    expect(after.rows[0]).toMatchObject({ status: 'processed', conflictWith: first.eventId });
  });
});
