// The limits of durable steps in a handler thread (issue 36 §1), each a clear error rather than a
// hang: a result over 256 KiB and a result that is not JSON make the delivery dead at once, naming
// the step; a step asked for after the handler returned is refused and its function never runs.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { send } from '../helpers/replicas.js';
import { TEST_SECRET } from '../helpers/sign.js';
import type { ServerProcess } from '../helpers/spawn-podhook.js';
import { readStepNotes, spawnStepServer, stepDelivery, stepRecordFile } from '../helpers/step-server.js';
import { dbIn, useTempDir } from '../helpers/temp-dir.js';

const tempDir = useTempDir('podhook-steps-limits-');
let server: ServerProcess | undefined;
let close: (() => void) | undefined;
afterEach(() => {
  server?.child.kill('SIGKILL');
  close?.();
});

async function start() {
  const dir = tempDir();
  const path = dbIn(dir);
  const record = stepRecordFile(dir);
  // A short retry ladder: were a limit a retried failure instead of a dead letter, it would show as `failed`.
  server = await spawnStepServer({ DATABASE_PATH: path, SVC_WEBHOOK_SECRET: TEST_SECRET, RECORD_FILE: record, DISPATCH_POLL_MS: '100', RETRY_BASE_MS: '60000' });
  const opened = openSqliteStore(path);
  close = () => opened.close();
  return { url: server.url, store: opened.store, notes: (id: string) => readStepNotes(record).filter((n) => n.id === id) };
}

const RESULT = (detail: string) => `limits: StepError: step "bad result": its result must be JSON (plain objects, arrays, strings, numbers, booleans, null): ${detail}`;

describe('the limits of durable steps, in a handler thread', () => {
  it.each([
    ['big', 'limits: StepError: step "bad result": its result is 307208 bytes, over the 262144 a step may record; record less (an id, not the whole answer)'],
    ['function', RESULT('.notify is a function')],
    ['bigint', RESULT('.count is a bigint')],
    ['cycle', RESULT('.self refers back to itself (a cycle)')],
    ['date', RESULT('.at is a Date')],
  ])('a result that may not be recorded (%s) makes the delivery dead at once, with the step named; nothing is recorded and the code after it never runs', { timeout: 30_000 }, async (which, error) => {
    const t = await start();
    const d = stepDelivery('pod.expiring', { case: which });
    expect((await send(t.url, d)).status).toBe(200);
    await vi.waitFor(async () => expect((await t.store.get(d.eventId))?.status).toBe('dead'), { timeout: 20_000, interval: 50 });
    expect(await t.store.get(d.eventId)).toMatchObject({ attempts: 1, lastError: error });
    expect(await t.store.loadSteps(d.eventId, 'limits')).toEqual([]);
    expect(t.notes(d.eventId).map((n) => n.what)).toEqual(['bad result ran']);
  });

  it.each([
    ['after-return', 'a handler that used no step before it returned'],
    ['after-return-used', 'a handler that used a step before it returned'],
    ['unawaited', 'a step asked for before the handler returned and not awaited: its function would start after it'],
  ])('a step asked for after the handler returned is refused with step_after_return, and its function never runs (%s: %s)', { timeout: 30_000 }, async (which) => {
    const t = await start();
    const d = stepDelivery('pod.expiring', { case: which });
    expect((await send(t.url, d)).status).toBe(200);
    await vi.waitFor(async () => expect((await t.store.get(d.eventId))?.status).toBe('processed'), { timeout: 20_000, interval: 50 });
    // The late call settles one way or the other: the handler records how.
    await vi.waitFor(() => expect(t.notes(d.eventId).filter((n) => n.what !== 'late ran').length).toBeGreaterThan(0), { timeout: 10_000, interval: 20 });
    const lines = t.notes(d.eventId);
    expect(lines.map((n) => [n.what, n.code ?? null])).toEqual([['refused', 'step_after_return']]);
    expect(lines[0]!.error).toBe('step "late" was asked for after the handler returned: await every step before returning');
    expect((await t.store.loadSteps(d.eventId, 'limits')).map((s) => s.name)).toEqual(which === 'after-return-used' ? ['first'] : []);
  });
});
