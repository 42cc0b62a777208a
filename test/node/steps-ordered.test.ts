// An ordered handler that sleeps (issue 36 §3), in `podhook serve` with handler threads on SQLite:
// the parked run keeps its key's turn; a later event of the same pod waits behind it, shows
// `waiting_on` in `podhook deliveries --json`, and runs once the parked run woke and finished.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { send } from '../helpers/replicas.js';
import { TEST_SECRET } from '../helpers/sign.js';
import { runCli, type ServerProcess } from '../helpers/spawn-podhook.js';
import { readStepNotes, spawnStepServer, stepDelivery, stepRecordFile } from '../helpers/step-server.js';
import { dbIn, useTempDir } from '../helpers/temp-dir.js';

const tempDir = useTempDir('podhook-steps-ordered-');
let server: ServerProcess | undefined;
let close: (() => void) | undefined;
afterEach(() => {
  server?.child.kill('SIGKILL');
  close?.();
});

interface Row {
  event_id: string;
  status: string;
  waiting_on: string | null;
}

describe('an ordered handler parked at a sleep', () => {
  it('keeps its key\'s turn: a later event of the same pod waits behind it (waiting_on) and runs after it woke; another pod\'s does not wait', { timeout: 60_000 }, async () => {
    const dir = tempDir();
    const path = dbIn(dir);
    const record = stepRecordFile(dir);
    server = await spawnStepServer({ DATABASE_PATH: path, SVC_WEBHOOK_SECRET: TEST_SECRET, RECORD_FILE: record, DISPATCH_POLL_MS: '100', ORDER_HOLD_MS: '0' });
    const { store, close: closeStore } = openSqliteStore(path);
    close = closeStore;
    const notes = (id: string) => readStepNotes(record).filter((n) => n.id === id);
    const at = Date.UTC(2026, 10, 25, 12);
    const status = (pod: string, offset: number, body: Record<string, unknown> = {}) =>
      stepDelivery('pod.status.changed', { pod: { id: pod }, occurred_at: new Date(at + offset).toISOString(), ...body });

    // Long enough to list the deliveries while it sleeps, on a loaded machine too.
    const first = status('pod-1', 0, { sleep: '6s' });
    expect((await send(server.url, first)).status).toBe(200);
    let wakeAt = 0;
    await vi.waitFor(
      async () => {
        const parked = await store.parkedRuns([first.eventId]);
        expect(parked).toMatchObject([{ handler: 'orderedSleeper', step: 'nap' }]);
        wakeAt = parked[0]!.wakeAt;
        expect(await store.get(first.eventId)).toMatchObject({ status: 'queued', nextAttemptAt: wakeAt });
      },
      { timeout: 20_000, interval: 20 },
    );

    const later = status('pod-1', 1_000);
    const other = status('pod-2', 1_000);
    expect((await send(server.url, later)).status).toBe(200);
    expect((await send(server.url, other)).status).toBe(200);
    // Another pod's event is not held by pod-1's parked run.
    await vi.waitFor(async () => expect((await store.get(other.eventId))?.status).toBe('processed'), { timeout: 20_000, interval: 50 });

    const listed = await runCli(['deliveries', '--json'], { DATABASE_PATH: path });
    expect(listed.code).toBe(0);
    const rows = JSON.parse(listed.stdout) as Row[];
    expect(Date.now(), 'the listing was read before the parked run woke').toBeLessThan(wakeAt);
    expect(rows.find((r) => r.event_id === later.eventId)).toMatchObject({ status: 'queued', waiting_on: first.eventId });
    expect(notes(later.eventId)).toEqual([]);

    await vi.waitFor(async () => expect((await store.get(later.eventId))?.status).toBe('processed'), { timeout: 30_000, interval: 50 });
    expect(await store.get(first.eventId)).toMatchObject({ status: 'processed' });
    const firstEnd = notes(first.eventId).find((n) => n.what === 'end')!;
    const laterStart = notes(later.eventId).find((n) => n.what === 'start')!;
    expect(notes(first.eventId).map((n) => n.what)).toEqual(['start', 'start', 'end']);
    expect(firstEnd.at).toBeGreaterThanOrEqual(wakeAt);
    expect(laterStart.at).toBeGreaterThanOrEqual(firstEnd.at);
    expect(notes(later.eventId).map((n) => n.what)).toEqual(['start', 'end']);
  });
});
