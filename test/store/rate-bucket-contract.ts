import { describe, expect, it } from 'vitest';
import { storeRunner, type StoreUnderTest } from './store-contract.js';

/**
 * The account's limits in the store (`rate_tokens`) and the stored API key (`api_keys`), on every
 * backend: a bucket never grants more than its capacity in any window, a wait is answered or
 * reserved, an emptied bucket holds back until its time and then paces, and takes racing each
 * other (PostgreSQL's pool runs them on several connections) are granted once each.
 */
export function describeRateBucketContract(name: string, open: () => Promise<StoreUnderTest>) {
  // A bucket of its own per test: a backend may keep one database for a whole file (D1).
  const fresh = () => ({ account: `acct-${crypto.randomUUID().slice(0, 8)}`, bucket: 'writes' });
  const withStore = storeRunner(open);
  const T0 = 1_790_000_000_000;

  describe(`rate bucket contract: ${name}`, () => {
    it(
      'grants the capacity at once, then answers how long until the earliest token is back; a wait that fits reserves it',
      withStore(async (store) => {
        const b = { ...fresh(), capacity: 3, windowMs: 1_000 };
        for (let i = 0; i < 3; i++) expect(await store.takeRateTokens({ ...b, now: T0 + i, maxWaitMs: 0 })).toMatchObject({ granted: true, waitMs: 0 });
        // The first token was taken at T0: it is back at T0 + 1000.
        expect(await store.takeRateTokens({ ...b, now: T0 + 400, maxWaitMs: 0 })).toEqual({ granted: false, waitMs: 600 });
        expect(await store.takeRateTokens({ ...b, now: T0 + 400, maxWaitMs: 599 })).toEqual({ granted: false, waitMs: 600 });
        // Reserved for T0 + 1000; the next one is the token taken at T0 + 1.
        expect(await store.takeRateTokens({ ...b, now: T0 + 400, maxWaitMs: 600 })).toMatchObject({ granted: true, waitMs: 600 });
        expect(await store.takeRateTokens({ ...b, now: T0 + 400, maxWaitMs: 10_000 })).toMatchObject({ granted: true, waitMs: 601 });
        expect(await store.takeRateTokens({ ...b, now: T0 + 400, maxWaitMs: 0 })).toEqual({ granted: false, waitMs: 602 });
        // Once the window has passed, every token is free again.
        expect(await store.takeRateTokens({ ...b, now: T0 + 5_000, count: 3, maxWaitMs: 0 })).toMatchObject({ granted: true, waitMs: 0 });
        await expect(store.takeRateTokens({ ...b, now: T0, count: 4, maxWaitMs: 0 })).rejects.toThrow(/count must be a whole number from 1 to the capacity \(3\)/);
      }),
    );

    it(
      'never grants more than the capacity in any window, however the takes and waits fall',
      withStore(async (store) => {
        const b = { ...fresh(), capacity: 5, windowMs: 1_000 };
        const uses: number[] = [];
        let now = T0;
        let seed = 7;
        const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
        for (let i = 0; i < 60; i++) {
          now += Math.floor(random() * 150);
          const taken = await store.takeRateTokens({ ...b, now, maxWaitMs: Math.floor(random() * 1_500) });
          if (taken.granted) uses.push(now + taken.waitMs);
        }
        uses.sort((x, y) => x - y);
        expect(uses.length).toBeGreaterThan(20);
        for (let i = 5; i < uses.length; i++) expect(uses[i]! - uses[i - 5]!, `use ${i} and the fifth before it`).toBeGreaterThanOrEqual(1_000);
      }),
    );

    it(
      'empties a bucket until a time: nothing before it, then one token at a time at the bucket’s pace',
      withStore(async (store) => {
        const b = { ...fresh(), capacity: 4, windowMs: 2_000 };
        expect(await store.takeRateTokens({ ...b, now: T0, maxWaitMs: 0 })).toMatchObject({ granted: true, waitMs: 0 });
        await store.emptyRateBucket({ ...b, until: T0 + 10_000 });
        expect(await store.takeRateTokens({ ...b, now: T0 + 1, maxWaitMs: 0 })).toEqual({ granted: false, waitMs: 9_999 });
        expect(await store.takeRateTokens({ ...b, now: T0 + 9_999, maxWaitMs: 0 })).toEqual({ granted: false, waitMs: 1 });
        expect(await store.takeRateTokens({ ...b, now: T0 + 10_000, maxWaitMs: 0 })).toMatchObject({ granted: true, waitMs: 0 });
        expect(await store.takeRateTokens({ ...b, now: T0 + 10_000, maxWaitMs: 0 })).toEqual({ granted: false, waitMs: 500 });
        expect(await store.takeRateTokens({ ...b, now: T0 + 10_000, count: 3, maxWaitMs: 1_500 })).toMatchObject({ granted: true, waitMs: 1_500 });
        // Emptying until an earlier time changes nothing already held longer.
        await store.emptyRateBucket({ ...b, until: T0 });
        expect(await store.takeRateTokens({ ...b, now: T0 + 10_000, maxWaitMs: 0 })).toEqual({ granted: false, waitMs: 2_000 });
      }),
    );

    it(
      'empties a bucket so that its first token is back at the time given, whichever tokens are in use (ranked by time, not number)',
      withStore(async (store) => {
        const b = { ...fresh(), capacity: 60, windowMs: 60_000 };
        // Fourteen calls made just now: tokens 0 to 13 are in use for a minute.
        expect(await store.takeRateTokens({ ...b, now: T0, count: 14, maxWaitMs: 0 })).toMatchObject({ granted: true, waitMs: 0 });
        await store.emptyRateBucket({ ...b, until: T0 + 2_000 });
        // The first token is back 2 s on (not 16 s, as when token k waited k seconds), then one a second.
        expect(await store.takeRateTokens({ ...b, now: T0 + 1, maxWaitMs: 0 })).toEqual({ granted: false, waitMs: 1_999 });
        expect(await store.takeRateTokens({ ...b, now: T0 + 2_000, maxWaitMs: 0 })).toMatchObject({ granted: true, waitMs: 0 });
        expect(await store.takeRateTokens({ ...b, now: T0 + 2_000, maxWaitMs: 0 })).toEqual({ granted: false, waitMs: 1_000 });
        // Those in use keep their own, later time: 46 tokens come back paced, then the 14.
        expect(await store.takeRateTokens({ ...b, now: T0 + 2_000, count: 45, maxWaitMs: 45_000 })).toMatchObject({ granted: true, waitMs: 45_000 });
        expect(await store.takeRateTokens({ ...b, now: T0 + 2_000, maxWaitMs: 0 })).toEqual({ granted: false, waitMs: 58_000 });
      }),
    );

    it(
      'takes no reservation further than an hour ahead, and brings a token held beyond it back within it',
      withStore(async (store) => {
        const b = { ...fresh(), capacity: 1, windowMs: 1_000 };
        await store.emptyRateBucket({ ...b, until: T0 + 1e15 });
        expect(await store.takeRateTokens({ ...b, now: T0, maxWaitMs: 10 * 3_600_000 })).toEqual({ granted: false, waitMs: 3_601_000 });
        expect(await store.takeRateTokens({ ...b, now: T0, maxWaitMs: 3_601_000 })).toEqual({ granted: false, waitMs: 3_601_000 });
        expect(await store.takeRateTokens({ ...b, now: T0 + 1_000, maxWaitMs: 3_600_000 })).toMatchObject({ granted: true, waitMs: 3_600_000 });
      }),
    );

    it(
      'names the tokens it grants, and settling them holds each one window after the answer, never less',
      withStore(async (store) => {
        const b = { ...fresh(), capacity: 3, windowMs: 1_000 };
        const taken = await store.takeRateTokens({ ...b, now: T0, count: 3, maxWaitMs: 0 });
        expect(taken.granted && [...taken.tokens].sort()).toEqual([0, 1, 2]);
        const [first, second] = (taken as { tokens: number[] }).tokens;
        // The call on the first token was answered 400 ms later.
        await store.settleRateTokens({ ...b, tokens: [first!], at: T0 + 400 });
        // Settling with an earlier time changes nothing.
        await store.settleRateTokens({ ...b, tokens: [second!], at: T0 - 5_000 });
        expect(await store.takeRateTokens({ ...b, now: T0 + 1_000, count: 2, maxWaitMs: 0 })).toMatchObject({ granted: true, waitMs: 0 });
        expect(await store.takeRateTokens({ ...b, now: T0 + 1_000, maxWaitMs: 0 })).toEqual({ granted: false, waitMs: 400 });
        await store.settleRateTokens({ ...b, tokens: [], at: T0 + 9_000 });
      }),
    );

    it(
      'keeps buckets and accounts apart, and follows a capacity lowered or raised',
      withStore(async (store) => {
        const writes = { ...fresh(), capacity: 2, windowMs: 60_000 };
        const reads = { ...writes, bucket: 'reads' };
        const other = { ...fresh(), capacity: 2, windowMs: 60_000 };
        expect(await store.takeRateTokens({ ...writes, now: T0, count: 2, maxWaitMs: 0 })).toMatchObject({ granted: true });
        expect(await store.takeRateTokens({ ...writes, now: T0, maxWaitMs: 0 })).toMatchObject({ granted: false });
        expect(await store.takeRateTokens({ ...reads, now: T0, count: 2, maxWaitMs: 0 })).toMatchObject({ granted: true });
        expect(await store.takeRateTokens({ ...other, now: T0, count: 2, maxWaitMs: 0 })).toMatchObject({ granted: true });
        // Raised to 3: one more token now; lowered to 1: the tokens past it are not used.
        expect(await store.takeRateTokens({ ...writes, capacity: 3, now: T0, maxWaitMs: 0 })).toMatchObject({ granted: true, waitMs: 0 });
        expect(await store.takeRateTokens({ ...writes, capacity: 3, now: T0, maxWaitMs: 0 })).toMatchObject({ granted: false });
        expect(await store.takeRateTokens({ ...writes, capacity: 1, now: T0 + 30_000, maxWaitMs: 0 })).toEqual({ granted: false, waitMs: 30_000 });
      }),
    );

    it(
      'grants each token once when takes race (on PostgreSQL, on several connections at once)',
      withStore(async (store) => {
        const b = { ...fresh(), capacity: 10, windowMs: 60_000 };
        await store.takeRateTokens({ ...b, now: T0, maxWaitMs: 0 }); // the bucket's rows exist before the race
        const results = await Promise.all(Array.from({ length: 30 }, () => store.takeRateTokens({ ...b, now: T0 + 1, maxWaitMs: 0 })));
        expect(results.filter((r) => r.granted)).toHaveLength(9);
        expect(results.filter((r) => !r.granted).every((r) => r.waitMs === 59_999)).toBe(true);
        // Racing reservations: each one gets a use time of its own, one window after a token's last use.
        const reserved = await Promise.all(Array.from({ length: 10 }, () => store.takeRateTokens({ ...b, now: T0 + 2, maxWaitMs: 120_000 })));
        expect(reserved.every((r) => r.granted)).toBe(true);
        const times = reserved.map((r) => T0 + 2 + r.waitMs).sort((x, y) => x - y);
        expect(times).toEqual([T0 + 60_000, ...Array.from({ length: 9 }, () => T0 + 60_001)]);
      }),
    );

    it(
      'keeps the API key apart from the signing secrets: put (replacing), read, remove',
      withStore(async (store) => {
        const account = fresh().account;
        expect(await store.readApiKey(account)).toBeNull();
        expect(await store.putApiKey({ account, secret: 'sk_live_first', fingerprint: 'aaaaaaaaaaaa', createdAt: T0 })).toBe(false);
        expect(await store.putApiKey({ account, secret: 'sk_live_second', fingerprint: 'bbbbbbbbbbbb', createdAt: T0 + 1 })).toBe(true);
        expect(await store.readApiKey(account)).toEqual({ account, secret: 'sk_live_second', fingerprint: 'bbbbbbbbbbbb', createdAt: T0 + 1 });
        expect((await store.listSecrets()).map((s) => s.secret)).not.toContain('sk_live_second');
        expect(await store.removeApiKey(account)).toBe(true);
        expect(await store.removeApiKey(account)).toBe(false);
        expect(await store.readApiKey(account)).toBeNull();
      }),
    );
  });
}
