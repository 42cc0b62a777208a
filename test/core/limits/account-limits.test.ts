import { describe, expect, it } from 'vitest';
import { createAccountLimits } from '../../../src/core/limits/account-limits.js';
import { parseBucketSize, formatBucketSize } from '../../../src/core/limits/bucket-size.js';
import { PodsRateLimited } from '../../../src/core/pods/pods-error.js';
import { openSqliteStore } from '../../../src/store/sqlite/sqlite-store.js';
import { dbIn, useTempDir } from '../../helpers/temp-dir.js';

const tempDir = useTempDir();

/** Two processes' worth of limits on one SQLite file, with a clock the test moves and sleeps it records. */
function twoOnOneFile() {
  const path = dbIn(tempDir());
  const a = openSqliteStore(path);
  const b = openSqliteStore(path);
  let now = 1_790_000_000_000;
  const slept: number[] = [];
  const sleep = async (ms: number) => {
    slept.push(ms);
    now += ms;
  };
  const limits = { writes: { capacity: 2, windowMs: 1_000 } };
  return {
    a: createAccountLimits({ store: a.store, clock: () => now, sleep, limits }),
    b: createAccountLimits({ store: b.store, clock: () => now, sleep, limits }),
    slept,
    advance: (ms: number) => void (now += ms),
    now: () => now,
    close: () => {
      a.close();
      b.close();
    },
  };
}

describe('the account limits', () => {
  it('share one bucket between processes: a token free within maxWaitMs is waited for, one further off throws PodsRateLimited with retryAt', async () => {
    const t = twoOnOneFile();
    try {
      expect((await t.a.acquire('writes')).waitedMs).toBe(0);
      t.advance(100);
      expect((await t.b.acquire('writes')).waitedMs).toBe(0);
      // Both tokens are spent (one by each process): the next is back 1 s after the first use.
      const refused = await t.a.acquire('writes', { maxWaitMs: 899, operation: 'queueAction' }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(PodsRateLimited);
      expect(refused).toMatchObject({ code: 'rate_limited', status: 429, bucket: 'writes', retryAt: t.now() + 900, requestId: null, retryable: true, operation: 'queueAction' });
      expect(t.slept).toEqual([]);
      expect((await t.b.acquire('writes', { maxWaitMs: 900 })).waitedMs).toBe(900);
      expect(t.slept).toEqual([900]);
      // The reads bucket is its own, at the spec's size.
      expect(t.a.sizes.reads).toEqual({ capacity: 240, windowMs: 60_000 });
      expect((await t.a.acquire('reads')).waitedMs).toBe(0);
    } finally {
      t.close();
    }
  });

  it('holds every process back after a 429 until retry_after_seconds, then paces the tokens back', async () => {
    const t = twoOnOneFile();
    try {
      await t.a.backOff('writes', 3);
      const refused = (await t.b.acquire('writes', { maxWaitMs: 2_999 }).catch((e: unknown) => e)) as PodsRateLimited;
      expect(refused.retryAt).toBe(t.now() + 3_000);
      expect((await t.b.acquire('writes', { maxWaitMs: 3_000 })).waitedMs).toBe(3_000);
      // The second token comes back half a window later (2 tokens a second), not at once.
      expect((await t.a.acquire('writes', { maxWaitMs: 10_000 })).waitedMs).toBe(500);
    } finally {
      t.close();
    }
  });

  it('counts a token’s window from the answer once the call settles it, for every process', async () => {
    const t = twoOnOneFile();
    try {
      const first = await t.a.acquire('writes');
      await t.b.acquire('writes');
      t.advance(700); // the first call took 700 ms to be answered
      await first.settle();
      // The other token (taken at 0, never settled) is back at 1000, 300 from now: the earliest.
      const refused = (await t.b.acquire('writes', { maxWaitMs: 299 }).catch((e: unknown) => e)) as PodsRateLimited;
      expect(refused.retryAt).toBe(t.now() + 300);
      expect((await t.b.acquire('writes', { maxWaitMs: 300 })).waitedMs).toBe(300);
      // The settled one is back 1000 after its answer (at 1700), not at 1000: 700 from now.
      expect((await t.a.acquire('writes', { maxWaitMs: 10_000 })).waitedMs).toBe(700);
    } finally {
      t.close();
    }
  });

  it('gives up a wait when the signal aborts, with the signal’s reason', async () => {
    const path = dbIn(tempDir());
    const { store, close } = openSqliteStore(path);
    try {
      const limits = createAccountLimits({ store, limits: { writes: { capacity: 1, windowMs: 60_000 } } });
      await limits.acquire('writes');
      const controller = new AbortController();
      const waiting = limits.acquire('writes', { maxWaitMs: 120_000, signal: controller.signal });
      controller.abort(new Error('handler stopped'));
      await expect(waiting).rejects.toThrow('handler stopped');
    } finally {
      close();
    }
  });

  it('reads bucket sizes as the variables write them', () => {
    expect(parseBucketSize('60/1m')).toEqual({ capacity: 60, windowMs: 60_000 });
    expect(parseBucketSize('240/m')).toEqual({ capacity: 240, windowMs: 60_000 });
    expect(parseBucketSize('30/1h')).toEqual({ capacity: 30, windowMs: 3_600_000 });
    expect(parseBucketSize('60/2s')).toEqual({ capacity: 60, windowMs: 2_000 });
    expect(parseBucketSize(' 5/250ms ')).toEqual({ capacity: 5, windowMs: 250 });
    for (const bad of ['60', '60/', '60/1d', '0/1m', '60/0s', 'sixty/1m', '-1/1m', '60/1.5m']) expect(parseBucketSize(bad), bad).toBeNull();
    expect([formatBucketSize({ capacity: 60, windowMs: 60_000 }), formatBucketSize({ capacity: 30, windowMs: 3_600_000 }), formatBucketSize({ capacity: 60, windowMs: 2_000 }), formatBucketSize({ capacity: 5, windowMs: 250 })]).toEqual(['60/1m', '30/1h', '60/2s', '5/250ms']);
  });
});
