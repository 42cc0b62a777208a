import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { createD1Store } from '../../src/store/d1/d1-store.js';
import { describeStoreContract, newDelivery } from '../store/store-contract.js';
import { emptyD1 } from './worker-target.js';

const open = async () => {
  await emptyD1(env.STORE_DB);
  return { store: createD1Store(env.STORE_DB), close() {} };
};

describeStoreContract('D1 (workerd)', open);

describe('D1 store limits', () => {
  it('claims, leases and reads the ledger of more deliveries than one D1 statement may bind (100 parameters)', async () => {
    const { store } = await open();
    const batch = Array.from({ length: 150 }, () => newDelivery());
    const claimed = await store.claim(batch);
    expect(claimed.filter((r) => r.outcome === 'new')).toHaveLength(150);
    const now = batch.at(-1)!.receivedAt;
    const leased = await store.leaseDue({ owner: 'o', now, leaseMs: 60_000, limit: 150 });
    expect(leased).toHaveLength(150);
    await store.completeDispatch(
      leased.map((d) => ({
        eventId: d.eventId, owner: 'o', status: 'processed' as const, attempts: 1, lastError: null, nextAttemptAt: null, now,
        runs: [{ eventId: d.eventId, handler: 'h', status: 'succeeded' as const, attempts: 1, lastError: null }],
      })),
    );
    const runs = await store.handlerRuns(batch.map((d) => d.eventId));
    expect(runs).toHaveLength(150);
    expect(new Set(runs.map((r) => r.eventId)).size).toBe(150);
    expect(await store.list({ status: 'processed', limit: 1000 })).toHaveLength(150);
  });

  it('stores the claim\'s bytes exactly (bound as hex text, decoded by SQLite\'s unhex): every byte value, an empty body', async () => {
    const { store } = await open();
    const every = newDelivery({ body: Uint8Array.from({ length: 512 }, (_, i) => i % 256), status: 'dead', lastError: 'invalid_json' });
    const empty = newDelivery({ body: new Uint8Array(0), status: 'dead', lastError: 'empty_body' });
    await store.claim([every, empty]);
    expect(Array.from((await store.get(every.eventId))!.body)).toEqual(Array.from(every.body));
    expect((await store.get(empty.eventId))!.body).toEqual(new Uint8Array(0));
  });

  it('keeps a whole claim batch out when one statement of it fails (the batch is atomic)', async () => {
    const { store } = await open();
    const good = newDelivery();
    // No headers breaks a NOT NULL column, so D1 refuses the second insert: nothing of the batch may stay.
    const bad = newDelivery({ status: 'bogus' as never, headers: undefined as never });
    await expect(store.claim([good, bad])).rejects.toThrow();
    expect(await store.get(good.eventId)).toBeNull();
  });
});
