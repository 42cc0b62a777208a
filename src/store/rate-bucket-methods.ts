import { and, eq, inArray, lt, sql } from 'drizzle-orm';
import { MAX_TOKEN_HOLD_MS, type RateBucketKey, type RateBucketSize, type RateBucketStore, type RateTake } from '../core/limits/rate-bucket-store.js';
import type { StoreBackend } from './store-backend.js';

/** Token rows per insert: four parameters each, under D1's 100. */
const TOKENS_PER_INSERT = 24;
/**
 * A take that lost its token to another replica tries the next one at once, as long as one is
 * free within its wait: each lost try is another replica's grant, so the tries end. This many in
 * a row is no contention but a fault (a clock or a row changing under every statement): an error.
 */
const MAX_LOST_TRIES = 1_000;

/**
 * The account's token buckets, the same statements on every backend (SQLite, D1, PostgreSQL).
 *
 * A take is one UPDATE of the bucket's earliest token, matched by its token number *and* the time
 * read in the same statement: `(token, taken_at) = (select … order by taken_at limit 1)`. On SQLite
 * and D1 one statement runs alone. On PostgreSQL two replicas may pick the same token; the second
 * waits for the first's row lock, then re-checks its WHERE against the row as committed, finds
 * `taken_at` moved and updates nothing, and this loop tries the next earliest token at once (a
 * race is waited out, never answered as a refusal). Either way a
 * token's successive uses are at least one window apart, which is what keeps every window within
 * the capacity. Settling a token after its call was answered moves its time on to the answer, so
 * the spacing holds where the service counts, too.
 */
export function rateBucketMethods({ db, tables: { rateTokens: t }, databaseNow }: StoreBackend): RateBucketStore {
  const ofBucket = ({ account, bucket }: RateBucketKey, capacity: number) =>
    and(eq(t.account, account), eq(t.bucket, bucket), lt(t.token, capacity));

  async function ensureTokens({ account, bucket }: RateBucketKey, capacity: number): Promise<void> {
    for (let from = 0; from < capacity; from += TOKENS_PER_INSERT) {
      const rows = [];
      for (let token = from; token < Math.min(capacity, from + TOKENS_PER_INSERT); token++) rows.push({ account, bucket, token, takenAt: 0 });
      await db.insert(t).values(rows).onConflictDoNothing();
    }
  }

  /** One token, when free within `maxWaitMs`: its number and the time it is reserved for, or null. */
  async function takeEarliest(key: RateBucketKey, { capacity, windowMs }: RateBucketSize, now: number, latest: number): Promise<{ token: number; at: number } | null> {
    const rows = await db
      .update(t)
      .set({ takenAt: sql`case when ${t.takenAt} + ${windowMs} > ${now} then ${t.takenAt} + ${windowMs} else ${now} end` })
      .where(
        and(
          ofBucket(key, capacity),
          sql`${t.takenAt} + ${windowMs} <= ${latest}`,
          sql`(${t.token}, ${t.takenAt}) = (select r.token, r.taken_at from rate_tokens r where r.account = ${key.account} and r.bucket = ${key.bucket} and r.token < ${capacity} order by r.taken_at, r.token limit 1)`,
        ),
      )
      .returning({ token: t.token, takenAt: t.takenAt });
    return rows.length > 0 ? { token: Number(rows[0]!.token), at: Number(rows[0]!.takenAt) } : null;
  }

  async function bucketState(key: RateBucketKey, capacity: number): Promise<{ tokens: number; earliest: number | null }> {
    const [row] = await db
      .select({ tokens: sql<number>`count(*)`, earliest: sql<number | null>`min(${t.takenAt})` })
      .from(t)
      .where(ofBucket(key, capacity));
    return { tokens: Number(row?.tokens ?? 0), earliest: row?.earliest == null ? null : Number(row.earliest) };
  }

  return {
    async takeRateTokens({ account, bucket, capacity, windowMs, now, count = 1, maxWaitMs }): Promise<RateTake> {
      checkSize(capacity, windowMs);
      if (!Number.isInteger(count) || count < 1 || count > capacity) throw new RangeError(`count must be a whole number from 1 to the capacity (${capacity}); got ${count}`);
      const key = { account, bucket };
      const size = { capacity, windowMs };
      const at = Math.floor(now);
      const latest = at + Math.min(MAX_TOKEN_HOLD_MS, Math.max(0, Math.floor(maxWaitMs)));
      let waitMs = 0;
      const tokens: number[] = [];
      for (let lost = 0; tokens.length < count; ) {
        const taken = await takeEarliest(key, size, at, latest);
        if (taken !== null) {
          waitMs = Math.max(waitMs, taken.at - at);
          tokens.push(taken.token);
          continue;
        }
        const state = await bucketState(key, capacity);
        if (state.tokens < capacity) {
          await ensureTokens(key, capacity);
          continue;
        }
        const freeIn = Math.max(0, (state.earliest ?? 0) + windowMs - at);
        if (freeIn > MAX_TOKEN_HOLD_MS + windowMs) {
          // Held beyond any time podhook sets (a store written before the bound): brought back to it.
          await db
            .update(t)
            .set({ takenAt: at + MAX_TOKEN_HOLD_MS })
            .where(and(ofBucket(key, capacity), sql`${t.takenAt} > ${at + MAX_TOKEN_HOLD_MS}`));
          continue;
        }
        // Not free within the wait: nothing more is taken.
        if (freeIn + at > latest) return { granted: false, waitMs: Math.max(freeIn, 1) };
        // Free within the wait, yet taken from under us: another replica won that token; the next one.
        if (++lost >= MAX_LOST_TRIES) throw new Error(`the ${bucket} bucket's take lost ${MAX_LOST_TRIES} tries in a row: its rows change under every statement`);
      }
      return { granted: true, waitMs, tokens };
    },

    async settleRateTokens({ account, bucket, tokens, at }) {
      if (tokens.length === 0) return;
      const when = Math.floor(at);
      await db
        .update(t)
        .set({ takenAt: sql`case when ${t.takenAt} < ${when} then ${when} else ${t.takenAt} end` })
        .where(and(eq(t.account, account), eq(t.bucket, bucket), inArray(t.token, [...tokens])));
    },

    async emptyRateBucket({ account, bucket, capacity, windowMs, until }) {
      checkSize(capacity, windowMs);
      const key = { account, bucket };
      const { tokens } = await bucketState(key, capacity);
      if (tokens < capacity) await ensureTokens(key, capacity);
      // The token k-th to come back (by time, then number) is free again at `until + k × window /
      // capacity`: taken, in effect, one window before that. Ranked by time, not by number, so the
      // first is free at `until` whichever tokens are in use; ranked in a subquery, so every row is
      // ranked as it was before this statement (SQLite's correlated subqueries would see rows
      // already moved).
      const ranked = sql`(select r.token as ranked_token, row_number() over (order by r.taken_at, r.token) - 1 as token_rank from rate_tokens r where r.account = ${account} and r.bucket = ${bucket} and r.token < ${capacity}) as ranked`;
      const held = sql`${Math.floor(until) - windowMs} + (cast(ranked.token_rank as bigint) * ${windowMs}) / ${capacity}`;
      await db
        .update(t)
        .set({ takenAt: sql`case when ${t.takenAt} < ${held} then ${held} else ${t.takenAt} end` })
        .from(ranked)
        .where(and(ofBucket(key, capacity), sql`${t.token} = ranked.ranked_token`));
    },

    ...(databaseNow ? { databaseNow } : {}),
  };
}

function checkSize(capacity: number, windowMs: number): void {
  if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError(`a bucket's capacity must be a whole number above 0; got ${capacity}`);
  if (!Number.isInteger(windowMs) || windowMs < 1) throw new RangeError(`a bucket's window must be a whole number of ms above 0; got ${windowMs}`);
}
