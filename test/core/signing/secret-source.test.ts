import { describe, expect, it } from 'vitest';
import { UnavailableError } from '../../../src/core/errors.js';
import { createSecretSource } from '../../../src/core/signing/secret-source.js';

/** A store of secrets whose reads are counted and can be held open. */
function storedSecrets(initial: string[]) {
  let secrets = initial;
  let reads = 0;
  let hold: Promise<void> | undefined;
  return {
    loadStored: async () => {
      reads++;
      const seen = secrets; // what the database had when the read began
      await hold;
      return seen;
    },
    set: (next: string[]) => (secrets = next),
    holdReads: () => {
      let open!: () => void;
      hold = new Promise((resolve) => (open = resolve));
      return () => {
        hold = undefined;
        open();
      };
    },
    reads: () => reads,
  };
}

describe('createSecretSource', () => {
  it('merges configured and stored secrets, configured first, without repeats', async () => {
    const store = storedSecrets(['whsec_b', 'whsec_a']);
    const source = createSecretSource({ configured: ['whsec_a'], loadStored: store.loadStored });
    expect(await source.getSecrets()).toEqual(['whsec_a', 'whsec_b']);
  });

  it('re-reads the stored secrets once the TTL has passed, and not before', async () => {
    let clock = 1_000;
    const store = storedSecrets(['whsec_old']);
    const source = createSecretSource({ configured: [], loadStored: store.loadStored, ttlMs: 1000, now: () => clock });
    expect(await source.getSecrets()).toEqual(['whsec_old']);
    store.set(['whsec_new']);
    clock += 999;
    expect(await source.getSecrets()).toEqual(['whsec_old']);
    clock += 1;
    expect(await source.getSecrets()).toEqual(['whsec_new']);
    expect(store.reads()).toBe(2);
  });

  it('reads the database once for every request that finds the list stale at the same time', async () => {
    let clock = 1_000;
    const store = storedSecrets(['whsec_1']);
    const source = createSecretSource({ configured: [], loadStored: store.loadStored, ttlMs: 1000, now: () => clock });
    await source.getSecrets();
    clock += 1000; // stale: a turn of 50 requests arrives
    store.set(['whsec_2']);
    const release = store.holdReads();
    const answers = Promise.all(Array.from({ length: 50 }, () => source.getSecrets()));
    release();
    await answers;
    expect(new Set((await answers).map((s) => s.join()))).toEqual(new Set(['whsec_2']));
    expect(store.reads()).toBe(2);
  });

  it('lets a failed read reject its callers, and reads again on the next call', async () => {
    let fail = true;
    const source = createSecretSource({
      configured: [],
      loadStored: async () => {
        if (fail) throw new Error('store unavailable');
        return ['whsec_ok'];
      },
    });
    // A 503 for the sender to retry, its cause kept for the log.
    const failed = await Promise.all([source.getSecrets(), source.getSecrets()]).catch((error: unknown) => error);
    expect(failed).toBeInstanceOf(UnavailableError);
    expect(failed).toMatchObject({ status: 503, reason: 'store_unavailable', cause: new Error('store unavailable') });
    fail = false;
    expect(await source.getSecrets()).toEqual(['whsec_ok']);
  });

  it('does not let a read started before invalidate fill the cache after it', async () => {
    const store = storedSecrets(['whsec_old']);
    const source = createSecretSource({ configured: [], loadStored: store.loadStored, ttlMs: 60_000 });
    const release = store.holdReads();
    const early = source.getSecrets(); // reads the old list, slowly
    store.set(['whsec_old', 'whsec_added']); // this process adds a secret meanwhile...
    source.invalidate(); // ...and drops the cache
    release();
    expect(await early).toEqual(['whsec_old']);
    expect(await source.getSecrets()).toEqual(['whsec_old', 'whsec_added']);
  });

  it('reads again after invalidate (this process changed the stored secrets), whatever the TTL', async () => {
    const store = storedSecrets(['whsec_x']);
    const source = createSecretSource({ configured: [], loadStored: store.loadStored, ttlMs: 60_000 });
    await source.getSecrets();
    store.set(['whsec_x', 'whsec_y']);
    source.invalidate();
    expect(await source.getSecrets()).toEqual(['whsec_x', 'whsec_y']);
  });

  it('knows the secrets at once for redaction: configured first, stored ones once read, none forgotten on invalidate', async () => {
    const db = storedSecrets(['stored-secret-1']);
    let changed = false;
    const source = createSecretSource({ configured: ['env-secret-1'], loadStored: db.loadStored, maybeChanged: () => changed });
    // Before any read: the configured ones; known() reads nothing itself.
    expect(source.known()).toEqual(['env-secret-1']);
    expect(db.reads()).toBe(0);
    await source.getSecrets();
    expect(source.known()).toEqual(['env-secret-1', 'stored-secret-1']);
    // Another process stores one: the next delivery's check reads it, and from then on it is known.
    db.set(['stored-secret-1', 'stored-secret-2']);
    changed = true;
    await source.getSecrets();
    changed = false;
    expect(source.known()).toEqual(['env-secret-1', 'stored-secret-1', 'stored-secret-2']);
    // This process removes one: until the list is read again nothing is forgotten.
    source.invalidate();
    db.set(['stored-secret-2']);
    expect(source.known()).toContain('stored-secret-1');
  });

  it('knows the hidden ones (the stored API key) read with each load, and never accepts them as signing secrets', async () => {
    const db = storedSecrets(['stored-secret-1']);
    let hidden = ['svc_api_key_1'];
    let changed = false;
    const source = createSecretSource({ configured: ['env-secret-1'], loadStored: db.loadStored, loadHidden: async () => hidden, maybeChanged: () => changed });
    expect(source.known()).toEqual(['env-secret-1']);
    expect(await source.getSecrets()).toEqual(['env-secret-1', 'stored-secret-1']);
    expect(source.known()).toEqual(['env-secret-1', 'stored-secret-1', 'svc_api_key_1']);
    // Replaced while the process runs: the new one is known at the next read, the old one kept.
    hidden = ['svc_api_key_2'];
    changed = true;
    expect(await source.getSecrets()).toEqual(['env-secret-1', 'stored-secret-1']);
    expect(source.known()).toEqual(['env-secret-1', 'stored-secret-1', 'svc_api_key_1', 'svc_api_key_2']);
  });

  it('reads ahead once refreshAhead.afterMs has passed, in the background: callers go on with the kept list, one read at a time, its result kept', async () => {
    let clock = 0;
    const store = storedSecrets(['whsec_old']);
    const background: Promise<unknown>[] = [];
    const source = createSecretSource({
      configured: [],
      loadStored: store.loadStored,
      ttlMs: 60_000,
      refreshAhead: { afterMs: 30_000, run: (read) => void background.push(read()) },
      now: () => clock,
    });
    expect(await source.getSecrets()).toEqual(['whsec_old']);
    store.set(['whsec_new']);
    clock = 29_999;
    expect(await source.getSecrets()).toEqual(['whsec_old']);
    expect(background).toHaveLength(0);
    clock = 30_000;
    const release = store.holdReads();
    expect(await source.getSecrets()).toEqual(['whsec_old']);
    expect(await source.getSecrets()).toEqual(['whsec_old']);
    expect(background).toHaveLength(1);
    release();
    await background[0];
    expect(await source.getSecrets()).toEqual(['whsec_new']);
    expect(store.reads()).toBe(2);
    // Read at 30 s: kept until 90 s, read ahead from 60 s.
    clock = 59_999;
    await source.getSecrets();
    expect(background).toHaveLength(1);
  });

  it('without shareReads, each caller that finds the list stale reads for itself (no one waits on another\'s read)', async () => {
    const store = storedSecrets(['whsec_1']);
    const source = createSecretSource({ configured: [], loadStored: store.loadStored, shareReads: false });
    const release = store.holdReads();
    const answers = Promise.all([source.getSecrets(), source.getSecrets(), source.getSecrets()]);
    release();
    expect(await answers).toEqual([['whsec_1'], ['whsec_1'], ['whsec_1']]);
    expect(store.reads()).toBe(3);
  });

  it('recheck (recheckOnMismatch) reads now, whatever the TTL, and what it read becomes the kept list', async () => {
    let clock = 0;
    const store = storedSecrets(['whsec_1']);
    const source = createSecretSource({ configured: ['env'], loadStored: store.loadStored, ttlMs: 60_000, recheckOnMismatch: true, now: () => clock });
    expect(createSecretSource({ configured: [], loadStored: store.loadStored }).recheck).toBeUndefined();
    expect(await source.getSecrets()).toEqual(['env', 'whsec_1']);
    store.set(['whsec_1', 'whsec_2']);
    clock = 1_000;
    expect(await source.getSecrets()).toEqual(['env', 'whsec_1']);
    expect(await source.recheck!()).toEqual(['env', 'whsec_1', 'whsec_2']);
    expect(await source.getSecrets()).toEqual(['env', 'whsec_1', 'whsec_2']);
    expect(store.reads()).toBe(2);
    // Kept from the recheck's read: stale 60 s after it began, not after the first.
    clock = 60_999;
    await source.getSecrets();
    expect(store.reads()).toBe(2);
    clock = 61_000;
    await source.getSecrets();
    expect(store.reads()).toBe(3);
  });

  it('reads both at once through loadAll when given (the Worker\'s one D1 batch)', async () => {
    let reads = 0;
    const source = createSecretSource({
      configured: ['env'],
      loadAll: async () => {
        reads++;
        return { stored: ['whsec_s'], hidden: ['svc_key'] };
      },
    });
    expect(await source.getSecrets()).toEqual(['env', 'whsec_s']);
    expect(source.known()).toEqual(['env', 'whsec_s', 'svc_key']);
    expect(reads).toBe(1);
  });
});
