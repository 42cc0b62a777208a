import { describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { ORDERED_REGISTRY } from '../fixtures/registry-paths.js';
import { historyDeliveries } from '../helpers/seed-history.js';
import { dbIn, useTempDir } from '../helpers/temp-dir.js';
import { runMain } from './run-main.js';

const tempDir = useTempDir();
const DAY = 86_400_000;

/** 40 stored deliveries handled by `notify` and `latestStatus` (running since before them), and one dead letter. */
async function history() {
  const path = dbIn(tempDir());
  const { store, close } = openSqliteStore(path);
  const from = Date.now() - 10 * DAY;
  const [dead, ...rest] = historyDeliveries({ count: 41, pods: 4, from });
  await store.importDeliveries([{ ...dead!, status: 'dead', attempts: 8, lastError: 'notify: Error: boom', processedAt: null }, ...rest]);
  await store.registerHandlers(['notify', 'latestStatus'], from - DAY);
  close();
  return { db: path, from };
}

const backfill = (args: string[], db: string, tty = false) => runMain(['backfill', ...args, '--handlers', ORDERED_REGISTRY], { DATABASE_PATH: db }, { stderrIsTTY: tty });

describe('podhook backfill', () => {
  it('counts with --dry-run, starts one per handler, lists it, and cancels it', async () => {
    const { db, from } = await history();
    const handlers = await runMain(['handlers', '--handlers', ORDERED_REGISTRY], { DATABASE_PATH: db });
    expect(handlers.stdout).toContain('! syncPod never ran on 40 stored deliveries of its types (it has not run on a receiver yet): podhook backfill syncPod --dry-run');
    expect(handlers.stdout).not.toMatch(/! (notify|latestStatus) never ran/);
    const json = JSON.parse((await runMain(['handlers', '--json', '--handlers', ORDERED_REGISTRY], { DATABASE_PATH: db })).stdout) as { history: unknown[] };
    expect(json.history).toEqual([{ handler: 'syncPod', first_seen_at: null, not_run: 40, backfill: 'podhook backfill syncPod' }]);

    const dry = await backfill(['syncPod', '--dry-run'], db);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain('Dry run: nothing is written.');
    expect(dry.stdout).toContain('40 match, 0 already handled: syncPod runs on 40.');
    expect(dry.stdout).toContain('1 dead letter in that range is left to redelivery');
    const since = new Date(from + 20_500).toISOString();
    const dryJson = JSON.parse((await backfill(['syncPod', '--dry-run', '--json', '--since', since], db)).stdout) as Record<string, unknown>;
    expect(dryJson).toEqual({
      handler: 'syncPod', types: ['pod.created', 'pod.active', 'pod.destroyed', 'pod.destroy_failed', 'pod.action.queued', 'pod.status.changed', 'pod.renewed', 'pod.renewal_failed', 'pod.expiring', 'pod.backup.completed', 'pod.backup.failed'],
      since, until: null, first_seen_at: null, matching: 20, already_handled: 0, would_run: 20, dead_letters: 0,
    });
    expect((await runMain(['backfill', '--status'], { DATABASE_PATH: db })).stdout).toBe('No backfill has been started.\n');

    const started = await backfill(['syncPod', '--rate', '20/s'], db);
    expect(started.code, started.stderr).toBe(0);
    const id = /Started backfill ([0-9a-f-]{36}) of syncPod/.exec(started.stdout)![1]!;
    expect(started.stdout).toContain('paced at most 20/s');
    const again = await backfill(['syncPod'], db);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`a backfill of syncPod is already running (${id})`);

    const status = await runMain(['backfill', '--status'], { DATABASE_PATH: db }, { stderrIsTTY: true });
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(new RegExp(`${id}\\s+syncPod\\s+running \\(no receiver holds it now\\)\\s+0/40`));
    expect(status.stderr).toContain('[..............................] syncPod  0/40');
    const listed = JSON.parse((await runMain(['backfill', '--status', '--json'], { DATABASE_PATH: db })).stdout) as Record<string, unknown>[];
    expect(listed).toEqual([expect.objectContaining({ id, handler: 'syncPod', state: 'running', total: 40, remaining: 40, rate: 20, running_on: null, until: null })]);

    const cancelled = await runMain(['backfill', '--cancel', id], { DATABASE_PATH: db });
    expect(cancelled.code, cancelled.stderr).toBe(0);
    expect(cancelled.stdout).toContain(`Cancelled backfill ${id} of syncPod after 0 of 40 deliveries`);
    expect((await runMain(['backfill', '--cancel', id], { DATABASE_PATH: db })).code).toBe(1);
    expect((await backfill(['syncPod', '--type', 'pod.created'], db)).code).toBe(0); // the handler is free again
  });

  it('refuses what it cannot do with exit code 2 and one line', async () => {
    const { db } = await history();
    const refused = async (args: string[], text: string) => {
      const r = await backfill(args, db);
      expect(r.code, r.stdout).toBe(2);
      expect(r.stderr).toContain(text);
    };
    await refused(['nobody'], 'no handler is named "nobody" (handlers: syncPod, latestStatus, notify)');
    await refused(['latestStatus', '--type', 'pod.created'], 'latestStatus does not take "pod.created" (it takes pod.status.changed)');
    await refused(['syncPod', '--type', 'pod.nope'], 'unknown event type "pod.nope"');
    await refused(['syncPod', '--rate', 'fast'], '--rate must be N/s');
    await refused(['syncPod', '--since', 'yesterday'], '--since must be an ISO 8601 date or time that exists');
    await refused(['syncPod', '--since', '9999999999999d'], '--since must be an ISO 8601 date or time that exists');
    await refused(['syncPod', '--since', '2026-02-30'], '--since must be');
    await refused(['syncPod', '--until', '99999999999d'], '--until must be');
    await refused(['syncPod', '--since', '1d', '--until', '2d'], 'must be before until');
    await refused(['syncPod', '--status'], 'give one handler NAME');
    await refused(['--status', '--rate', '5'], '--since, --until, --type, --rate and --dry-run go with a handler NAME');
    await refused([], 'give one handler NAME');
    // Nothing was started by any of them.
    expect((await runMain(['backfill', '--status'], { DATABASE_PATH: db })).stdout).toBe('No backfill has been started.\n');
  });

  it('lists every backfill when one stored by an older version has a time no clock can show', async () => {
    const { db } = await history();
    const { store, close } = openSqliteStore(db);
    await store.createBackfill({ id: '00000000-0000-4000-8000-0000000000b1', handler: 'syncPod', since: -864e18, until: null, eventType: null, rate: null, total: 40, createdAt: Date.now() });
    close();
    const status = await runMain(['backfill', '--status'], { DATABASE_PATH: db }, { stderrIsTTY: true });
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toMatch(/00000000-0000-4000-8000-0000000000b1\s+syncPod\s+running/);
    const json = await runMain(['backfill', '--status', '--json'], { DATABASE_PATH: db });
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual([expect.objectContaining({ id: '00000000-0000-4000-8000-0000000000b1', since: null, state: 'running' })]);
  });
});
