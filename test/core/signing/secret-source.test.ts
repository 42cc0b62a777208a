import { describe, expect, it } from 'vitest';
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
    await expect(Promise.all([source.getSecrets(), source.getSecrets()])).rejects.toThrow('store unavailable');
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
});
