import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openPostgres } from '../../src/store/postgres/open-postgres.js';
import { migrationsFolder } from '../../src/store/migrations-folder.js';
import { createPostgresStore } from '../../src/store/postgres/open-postgres.js';
import { freshDatabaseUrl, migratedDatabaseUrl } from '../helpers/postgres.js';
import { describeStoreContract, newDelivery } from './store-contract.js';

async function openStore(options: Parameters<typeof createPostgresStore>[1] = {}) {
  // Migrated already (a copy of a template): migrate() finds nothing left to apply, as a restart does.
  const opened = openPostgres(await migratedDatabaseUrl());
  await opened.migrate();
  return { store: createPostgresStore(opened.db, options), opened, close: () => opened.close() };
}

describeStoreContract('postgres', () => openStore());

describe('postgres migrations', () => {
  it('are applied exactly once when several replicas start at once on a fresh database (advisory lock)', async () => {
    const url = await freshDatabaseUrl();
    const replicas = Array.from({ length: 5 }, () => openPostgres(url, { max: 2 }));
    try {
      await Promise.all(replicas.map((r) => r.migrate()));
      const journal = JSON.parse(readFileSync(join(migrationsFolder('postgres'), 'meta', '_journal.json'), 'utf8')) as { entries: unknown[] };
      const { rows } = await replicas[0]!.pool.query<{ n: number }>('select count(*)::int as n from drizzle.__drizzle_migrations');
      expect(rows[0]!.n).toBe(journal.entries.length);
      // A later start finds nothing to do.
      await replicas[1]!.migrate();
      const again = await replicas[0]!.pool.query<{ n: number }>('select count(*)::int as n from drizzle.__drizzle_migrations');
      expect(again.rows[0]!.n).toBe(journal.entries.length);
    } finally {
      await Promise.all(replicas.map((r) => r.close()));
    }
  });
});

describe('postgres across replicas', () => {
  it('stores copies of one event id sent to two replicas at once once: exactly one is new', async () => {
    const url = await freshDatabaseUrl();
    const a = openPostgres(url);
    const b = openPostgres(url);
    await Promise.all([a.migrate(), b.migrate()]);
    const storeA = createPostgresStore(a.db, { schedule: setImmediate });
    const storeB = createPostgresStore(b.db, { schedule: setImmediate });
    try {
      for (let round = 0; round < 10; round++) {
        const d = newDelivery();
        const others = [newDelivery(), newDelivery()];
        const results = await Promise.all([
          storeA.claim([others[0]!]), storeA.claim([d]), storeB.claim([d]), storeB.claim([others[1]!]), storeA.claim([{ ...d }]),
        ]);
        const forD = [results[1]![0]!, results[2]![0]!, results[4]![0]!];
        expect(forD.filter((r) => r.outcome === 'new')).toHaveLength(1);
        expect(forD.filter((r) => r.outcome === 'duplicate').map((r) => (r as { deliveryCount: number }).deliveryCount).sort()).toEqual([2, 3]);
        expect(results[0]).toEqual([{ outcome: 'new' }]);
        expect(results[3]).toEqual([{ outcome: 'new' }]);
        expect(await storeA.get(d.eventId)).toMatchObject({ deliveryCount: 3 });
      }
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('never leases one row to two replicas (FOR UPDATE SKIP LOCKED), and a dead replica\'s lease runs out', async () => {
    const url = await freshDatabaseUrl();
    const replicas = [openPostgres(url), openPostgres(url), openPostgres(url)];
    await replicas[0]!.migrate();
    const stores = replicas.map((r) => createPostgresStore(r.db));
    try {
      const batch = Array.from({ length: 60 }, () => newDelivery());
      await stores[0]!.claim(batch);
      const now = batch.at(-1)!.receivedAt;
      const leased = await Promise.all(
        stores.flatMap((s, i) => [1, 2, 3].map((k) => s.leaseDue({ owner: `r${i}-${k}`, now, leaseMs: 30_000, limit: 7 }))),
      );
      const ids = leased.flat().map((d) => d.eventId);
      expect(new Set(ids).size).toBe(ids.length);
      expect(ids.length).toBe(60);
      // The owners are gone (kill -9): after the lease, another replica takes every row.
      expect(await stores[1]!.leaseDue({ owner: 'late', now: now + 30_001, leaseMs: 30_000, limit: 100 })).toHaveLength(60);
    } finally {
      await Promise.all(replicas.map((r) => r.close()));
    }
  });
});

describe('postgres group commit', () => {
  it('answers each caller of a shared batch with its own results, in order, mixing new, duplicate and conflict', async () => {
    const { store, close } = await openStore({ schedule: setImmediate });
    try {
      const stored = newDelivery();
      await store.claim([stored]);
      const fresh = newDelivery();
      const replay = newDelivery({ signatureT: stored.signatureT, contentDigest: stored.contentDigest });
      const results = await Promise.all([
        store.claim([fresh]),
        store.claim([{ ...stored }]),
        store.claim([replay, newDelivery({ eventId: stored.eventId, eventType: 'pod.destroyed' })]),
        store.claim([{ ...fresh }]),
      ]);
      expect(results).toEqual([
        [{ outcome: 'new' }],
        [{ outcome: 'duplicate', deliveryCount: 2 }],
        [{ outcome: 'conflict' }, { outcome: 'conflict' }],
        [{ outcome: 'duplicate', deliveryCount: 2 }],
      ]);
    } finally {
      await close();
    }
  });

  it('claims a batch of new deliveries with one statement (one round trip, no begin/commit), and counts copies with a second', async () => {
    const { store, opened, close } = await openStore({ schedule: setImmediate });

    // Every statement this store's connections send (a begin or commit would be one too): one
    // statement per round trip. Each client is wrapped when the pool hands it out.
    const sent: string[] = [];
    const wrapped = new WeakSet<object>();
    opened.pool.on('acquire', (client) => {
      if (wrapped.has(client)) return;
      wrapped.add(client);
      const query = client.query.bind(client) as (...a: unknown[]) => unknown;
      Object.assign(client, {
        query: (config: string | { text: string }, ...rest: unknown[]) => {
          sent.push((typeof config === 'string' ? config : config.text).trim().split('\n')[0]!);
          return query(config, ...rest);
        },
      });
    });
    try {
      const batch = Array.from({ length: 5 }, () => newDelivery());
      const results = await Promise.all(batch.map((d) => store.claim([d])));
      expect(results).toEqual(batch.map(() => [{ outcome: 'new' }]));
      expect(sent).toEqual(['with ins as (']);

      sent.length = 0;
      const again = await Promise.all([store.claim([{ ...batch[0]! }]), store.claim([newDelivery()])]);
      expect(again).toEqual([[{ outcome: 'duplicate', deliveryCount: 2 }], [{ outcome: 'new' }]]);
      expect(sent).toEqual(['with ins as (', 'update deliveries d']);
    } finally {
      await close();
    }
  });

  it('rejects every claim of a batch when the server is unreachable: nothing is acknowledged', async () => {
    const opened = openPostgres('postgres://nobody:secret-pw@127.0.0.1:1/none', { connectionTimeoutMs: 2000 });
    const store = createPostgresStore(opened.db, { schedule: setImmediate });
    const results = await Promise.allSettled([store.claim([newDelivery()]), store.claim([newDelivery()])]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect(String((results[0] as PromiseRejectedResult).reason)).not.toContain('secret-pw');
    await opened.close();
  });
});
