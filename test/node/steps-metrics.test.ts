// /metrics on durable steps (Node): steps by handler and outcome, the runs parked now, and how far
// past its wake the earliest one is, on the real runtime and a real SQLite file.
import { describe, expect, it } from 'vitest';
import { defineHandler } from '../../src/core/events/define-handler.js';
import { openNodeTarget } from '../helpers/node-target.js';
import { FIXED_NOW_MS, signDelivery, TEST_SECRET, toRequest } from '../helpers/sign.js';
import { useTempDir } from '../helpers/temp-dir.js';

const tempDir = useTempDir();

/** A step, a 90 s sleep, then a step that throws at its first try. */
const waiter = defineHandler('pod.created', { name: 'waiter' }, async (_event, { step, sleep }) => {
  await step('queue', () => 'queued');
  await sleep('wait for output', '90s');
  await step('read', ({ attempt }) => {
    if (attempt === 1) throw new Error('no output yet');
    return 'output';
  });
});

/** The value of one series (0 when it is absent). */
function sample(text: string, series: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

describe('GET /metrics: durable steps', () => {
  it('counts steps by outcome and shows the parked runs and the earliest overdue wake', async () => {
    const target = openNodeTarget(tempDir(), { secrets: [TEST_SECRET] }, { handlers: [waiter] });
    const scrape = async () => (await target.fetch(new Request('http://podhook.test/metrics'))).text();
    const steps = (text: string, outcome: string) => sample(text, `podhook_steps_total{handler="waiter",outcome="${outcome}"}`);
    let now = FIXED_NOW_MS;
    target.setNow(now);
    expect((await target.fetch(toRequest(signDelivery()))).status).toBe(200);
    await target.runtime.dispatcher.runUntilIdle();

    let text = await scrape();
    expect(text).toContain('# TYPE podhook_steps_total counter');
    expect([steps(text, 'succeeded'), steps(text, 'failed'), steps(text, 'replayed')]).toEqual([1, 0, 0]);
    expect(text).toContain('\npodhook_parked_runs 1\n');
    expect(text).toContain('\npodhook_parked_overdue_seconds 0\n');

    // 30 s past its wake, not picked up yet: overdue (the gauges are read again after 15 s).
    target.setNow((now += 120_000));
    text = await scrape();
    expect(text).toContain('\npodhook_parked_runs 1\n');
    expect(text).toContain('\npodhook_parked_overdue_seconds 30\n');

    // Woken: "queue" given back, the sleep over, "read" fails; then the retry succeeds.
    await target.runtime.dispatcher.runUntilIdle();
    text = await scrape();
    expect([steps(text, 'succeeded'), steps(text, 'failed'), steps(text, 'replayed')]).toEqual([2, 1, 1]);
    target.setNow((now += 3_600_000));
    await target.runtime.dispatcher.runUntilIdle();
    expect((await target.store.list({ limit: 1 }))[0]).toMatchObject({ status: 'processed' });
    text = await scrape();
    expect([steps(text, 'succeeded'), steps(text, 'failed'), steps(text, 'replayed')]).toEqual([3, 1, 3]);
    expect(text).toContain('\npodhook_parked_runs 0\n');
    expect(text).toContain('\npodhook_parked_overdue_seconds 0\n');
    await target.close();
  });

  it('does not count a woken run that is running as parked', async () => {
    let entered!: () => void;
    const inRead = new Promise<void>((r) => (entered = r));
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let runs = 0;
    // Woken, the run works (code outside any step) before it reaches its sleep again.
    const slow = defineHandler('pod.created', { name: 'slow' }, async (_event, { step, sleep }) => {
      if (++runs === 2) {
        entered();
        await held;
      }
      await sleep('nap', '90s');
      await step('read', () => 'output');
    });
    const target = openNodeTarget(tempDir(), { secrets: [TEST_SECRET] }, { handlers: [slow] });
    target.setNow(FIXED_NOW_MS);
    expect((await target.fetch(toRequest(signDelivery()))).status).toBe(200);
    await target.runtime.dispatcher.runUntilIdle();
    expect(await target.store.parkStats()).toEqual({ parked: 1, earliestWakeAt: FIXED_NOW_MS + 90_000 });

    target.setNow(FIXED_NOW_MS + 91_000);
    const woken = target.runtime.dispatcher.runUntilIdle();
    await inRead;
    expect(await target.store.parkStats()).toEqual({ parked: 0, earliestWakeAt: null });
    const [delivery] = await target.store.list({ limit: 1 });
    expect(await target.store.parkedRuns([delivery!.eventId])).toEqual([]);
    release();
    await woken;
    expect((await target.store.list({ limit: 1 }))[0]).toMatchObject({ status: 'processed' });
    await target.close();
  });
});
