import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createPodhookMetrics } from '../../../src/core/observability/podhook-metrics.js';
import { openSqliteStore } from '../../../src/store/sqlite/sqlite-store.js';
import { dbIn, useTempDir } from '../../helpers/temp-dir.js';

const tempDir = useTempDir();
// The gauges read the store (queue, order, backfills, parked runs): a real, empty SQLite file.
let opened: ReturnType<typeof openSqliteStore>;
let store: ReturnType<typeof openSqliteStore>['store'];
beforeEach(() => {
  opened = openSqliteStore(dbIn(tempDir()));
  store = opened.store;
});
afterEach(() => opened.close());

describe('podhook metrics of the pod client and the handler threads', () => {
  it('counts calls by operation and code, seconds waited by bucket, and runs parked on a bucket until they are due', async () => {
    let now = 1_000_000;
    const m = createPodhookMetrics(store, { clock: () => now });
    m.pods.observer.call!({ operation: 'queueAction', bucket: 'writes', code: 'ok', status: 202, requestId: 'r-1', durationMs: 3 });
    m.pods.observer.call!({ operation: 'queueAction', bucket: 'writes', code: 'rate_limited', status: 429, requestId: 'r-2', durationMs: 2 });
    m.pods.observer.wait!({ operation: 'list', bucket: 'reads', waitedMs: 1_500 });
    m.pods.parked('writes', now + 2_000);
    m.pods.parked('writes', now + 5_000);
    let text = await m.registry.render();
    expect(text).toContain('podhook_pods_calls_total{code="ok",operation="queueAction"} 1');
    expect(text).toContain('podhook_pods_calls_total{code="rate_limited",operation="queueAction"} 1');
    expect(text).toContain('podhook_pods_wait_seconds_total{bucket="reads"} 1.5');
    expect(text).toContain('podhook_pods_parked_runs{bucket="writes"} 2');
    expect(text).toContain('podhook_pods_parked_runs{bucket="key_mints"} 0');
    now += 3_000; // the first one is due again
    text = await m.registry.render();
    expect(text).toContain('podhook_pods_parked_runs{bucket="writes"} 1');
  });

  it('keeps the runs parked on a bucket bounded without a scrape: those due are let go as runs park, and at most 10,000 are kept (47 item 7)', async () => {
    let now = 1_000_000;
    const m = createPodhookMetrics(store, { clock: () => now });
    // 50,000 runs parked and woken again while nothing reads /metrics, then 12,000 still waiting.
    for (let i = 0; i < 50_000; i++) m.pods.parked('writes', now + 1_000), (now += 1);
    now += 1_000;
    for (let i = 0; i < 12_000; i++) m.pods.parked(i % 2 === 0 ? 'writes' : 'reads', now + 60_000 + i);
    const text = await m.registry.render();
    const count = (bucket: string) => Number(new RegExp(`podhook_pods_parked_runs\\{bucket="${bucket}"\\} (\\d+)`).exec(text)![1]);
    expect(count('writes') + count('reads')).toBe(10_000);
    // Those let go past the bound are the soonest due (the first 2,000): 62 s on, one more is due.
    now += 62_000;
    const later = await m.registry.render();
    const left = ['writes', 'reads'].map((b) => Number(new RegExp(`podhook_pods_parked_runs\\{bucket="${b}"\\} (\\d+)`).exec(later)![1]));
    expect(left[0]! + left[1]!).toBe(9_999);
  });

  it('counts stray errors by handler and kind, and thread restarts by reason', async () => {
    const m = createPodhookMetrics(store);
    m.threads.stray('uncaught_exception', 'notify');
    m.threads.stray('unhandled_rejection', undefined);
    m.threads.restarted('timeout');
    const text = await m.registry.render();
    expect(text).toContain('podhook_handler_stray_errors_total{handler="notify",kind="uncaught_exception"} 1');
    expect(text).toContain('podhook_handler_stray_errors_total{handler="unknown",kind="unhandled_rejection"} 1');
    expect(text).toContain('podhook_handler_thread_restarts_total{reason="timeout"} 1');
  });
});
