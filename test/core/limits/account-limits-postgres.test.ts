// Issue 47 item 7 on PostgreSQL: the account's buckets run on the database's clock (a replica whose
// clock runs fast spends no token early, one that runs slow holds none late), and replicas racing
// for tokens wait their turn instead of giving up and parking runs for nothing.
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { createAccountLimits, type AccountLimits } from '../../../src/core/limits/account-limits.js';
import { PodsRateLimited } from '../../../src/core/pods/pods-error.js';
import { createPostgresStore, openPostgres, type OpenedPostgres } from '../../../src/store/postgres/open-postgres.js';
import { freshDatabaseUrl } from '../../helpers/postgres.js';

const opened: OpenedPostgres[] = [];
afterEach(async () => {
  for (const o of opened.splice(0)) await o.close();
});

/** `count` replicas' stores on one fresh database (each its own pool of `max` connections). */
async function replicas(count: number, max = 10) {
  const url = await freshDatabaseUrl();
  const first = openPostgres(url, { max });
  await first.migrate();
  opened.push(first);
  const pools = [first, ...Array.from({ length: count - 1 }, () => openPostgres(url, { max }))];
  opened.push(...pools.slice(1));
  return pools.map((p) => createPostgresStore(p.db));
}

const refusal = (p: Promise<unknown>) => p.then(() => null, (e: unknown) => e as PodsRateLimited);

describe('the account limits on PostgreSQL', () => {
  it('run on the database’s clock: a replica 30 s fast spends no token early, one 30 s slow holds none late', async () => {
    const limits = { writes: { capacity: 1, windowMs: 2_000 } };
    const [a, b] = await replicas(2);
    await createAccountLimits({ store: a!, limits }).acquire('writes');
    const fast = createAccountLimits({ store: b!, limits, clock: () => Date.now() + 30_000 });
    const early = await refusal(fast.acquire('writes'));
    expect(early).toBeInstanceOf(PodsRateLimited);
    // retryAt is on the asking replica's own clock: about 2 s from its now.
    const left = early!.retryAt - (Date.now() + 30_000);
    expect(left).toBeGreaterThan(1_000);
    expect(left).toBeLessThanOrEqual(2_000);

    const [c, d] = await replicas(2);
    await createAccountLimits({ store: c!, limits, clock: () => Date.now() + 30_000 }).acquire('writes');
    const slow = createAccountLimits({ store: d!, limits, clock: () => Date.now() - 30_000 });
    // The fast one's token is back 2 s on for the slow one too, not 62 s.
    const started = Date.now();
    expect((await slow.acquire('writes', { maxWaitMs: 3_000 })).waitedMs).toBeLessThanOrEqual(2_000);
    expect(Date.now() - started).toBeLessThan(3_000);
    // The time they read: the server's.
    expect(Math.abs((await a!.databaseNow!()) - Date.now())).toBeLessThan(5_000);
  });

  it('let a take that keeps losing its token to other replicas try again until it wins, not give up and park the run', async () => {
    const base = new URL(await freshDatabaseUrl());
    const migrated = openPostgres(base.href);
    await migrated.migrate();
    opened.push(migrated);
    const mine = new URL(base);
    mine.searchParams.set('application_name', 'this-replica');
    const own = openPostgres(mine.href);
    opened.push(own);
    const limits = createAccountLimits({ store: createPostgresStore(own.db), limits: { writes: { capacity: 2, windowMs: 1 } } });
    await limits.acquire('writes'); // the bucket's two rows exist
    const others = await Promise.all([0, 1].map(async () => {
      const c = new pg.Client({ connectionString: base.href });
      await c.connect();
      return c;
    }));
    await others[0]!.query(`update rate_tokens set taken_at = token`);
    // Two other replicas move the tokens in turn, each in a transaction held open until this
    // replica's take waits on its row: when it commits, the token this take picked is no longer
    // the earliest, the take updates nothing (lost), and its next try picks the other token, which
    // the other replica holds by then. Forty rounds: more than the 32 lost tries a take once gave up after.
    const waitingOnALock = async () =>
      Number((await others[0]!.query(`select count(*) as n from pg_stat_activity where application_name = 'this-replica' and wait_event_type = 'Lock'`)).rows[0].n) > 0;
    const move = (c: pg.Client, token: number) => c.query('begin').then(() => c.query(`update rate_tokens set taken_at = taken_at + 1000 where token = ${token}`));
    await move(others[0]!, 0);
    let settled = false;
    const taking = limits.acquire('writes').then(() => 'granted', (e: unknown) => e).finally(() => (settled = true));
    let rounds = 0;
    try {
      for (; rounds < 40 && !settled; rounds++) {
        const [holder, next] = rounds % 2 === 0 ? [others[0]!, others[1]!] : [others[1]!, others[0]!];
        await move(next, (rounds + 1) % 2);
        const deadline = Date.now() + 5_000;
        while (!settled && !(await waitingOnALock())) {
          if (Date.now() > deadline) throw new Error(`round ${rounds}: the take is not waiting on a lock`);
        }
        await holder.query('commit');
      }
      await Promise.all(others.map((c) => c.query('commit')));
      expect(rounds).toBe(40);
      expect(await taking).toBe('granted');
    } finally {
      await Promise.all(others.map((c) => c.end()));
    }
  });
});
