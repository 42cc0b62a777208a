import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { EVENT_TYPES } from '../../src/core/events/event-types.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { BROKEN_REGISTRY, EMPTY_REGISTRY, PARTIAL_REGISTRY } from '../fixtures/registry-paths.js';
import { dbIn, useTempDir } from '../helpers/temp-dir.js';
import { runMain } from './run-main.js';

const tempDir = useTempDir();

/** A database where `podhook register` stored a webhook subscribed to `eventTypes` (null: every event). */
async function registered(eventTypes: string[] | null) {
  const path = dbIn(tempDir());
  const { store, close } = openSqliteStore(path);
  await store.addSecret({ id: crypto.randomUUID(), webhookId: 'wh_123', url: 'https://hooks.example.com/webhooks', eventTypes, secret: 's', fingerprint: 'fp', createdAt: 1 });
  close();
  return path;
}

describe('podhook handlers', () => {
  it('--json: the registry, each type with its handlers and the stored webhook subscription', async () => {
    const db = await registered(['pod.created', 'pod.active']);
    const result = await runMain(['handlers', '--json', '--handlers', PARTIAL_REGISTRY], { DATABASE_PATH: db });
    expect(result.code, result.stderr).toBe(0);
    const out = JSON.parse(result.stdout) as { handlers: unknown[]; types: { type: string; handlers: string[]; subscribed: boolean | null }[] };
    expect(out.handlers).toEqual([
      { name: 'welcome', pattern: 'pod.created', types: ['pod.created'] },
      { name: 'archiveBackups', pattern: 'pod.backup.*', types: ['pod.backup.completed', 'pod.backup.failed'] },
    ]);
    expect(out.types.map((t) => t.type)).toEqual([...EVENT_TYPES]);
    expect(out.types.find((t) => t.type === 'pod.created')).toEqual({ type: 'pod.created', handlers: ['welcome'], subscribed: true, samples: null });
    expect(out.types.find((t) => t.type === 'pod.active')).toEqual({ type: 'pod.active', handlers: [], subscribed: true, samples: null });
    expect(out.types.find((t) => t.type === 'pod.backup.failed')).toEqual({ type: 'pod.backup.failed', handlers: ['archiveBackups'], subscribed: false, samples: null });
    expect(out.types.find((t) => t.type === 'pod.renewed')).toEqual({ type: 'pod.renewed', handlers: [], subscribed: false, samples: null });
  });

  it('flags both mismatches in the table', async () => {
    const db = await registered(['pod.created', 'pod.active']);
    const result = await runMain(['handlers', '--handlers', PARTIAL_REGISTRY], { DATABASE_PATH: db });
    expect(result.code).toBe(0);
    const line = (type: string) => result.stdout.split('\n').find((l) => l.startsWith(`${type} `)) ?? '';
    expect(result.stdout).toContain('webhook wh_123 → https://hooks.example.com/webhooks');
    // The shape column: "-", this fixture registry exports no learned shapes.
    expect(line('pod.active')).toMatch(/\(none\) +yes +- +! subscribed but unhandled: stored as ignored$/);
    expect(line('pod.backup.completed')).toMatch(/archiveBackups +no +- +! handled but not subscribed: never arrives$/);
    expect(line('pod.created')).toMatch(/welcome +yes +-$/);
    expect(line('pod.renewed')).toMatch(/\(none\) +no +-$/);
    expect(result.stdout).toContain('3 mismatches flagged with "!".');
  });

  it('says the subscription is unknown without a stored webhook, and never creates the database', async () => {
    const db = dbIn(tempDir());
    const result = await runMain(['handlers', '--json', '--handlers', EMPTY_REGISTRY], { DATABASE_PATH: db });
    expect(result.code).toBe(0);
    const out = JSON.parse(result.stdout) as { handlers: unknown[]; types: { subscribed: unknown; handlers: unknown[] }[] };
    expect(out.handlers).toEqual([]);
    expect(out.types.every((t) => t.subscribed === null && t.handlers.length === 0)).toBe(true);
    expect(existsSync(db)).toBe(false);
    const text = await runMain(['handlers', '--handlers', EMPTY_REGISTRY], { DATABASE_PATH: db });
    expect(text.stdout).toContain('(none: every delivery is stored as ignored)');
    expect(text.stdout).toContain('subscription unknown');
  });

  it('a webhook created without event types receives every type', async () => {
    const db = await registered(null);
    const out = JSON.parse((await runMain(['handlers', '--json', '--handlers', PARTIAL_REGISTRY], { DATABASE_PATH: db })).stdout) as { types: { subscribed: boolean }[] };
    expect(out.types.every((t) => t.subscribed)).toBe(true);
  });

  it('exits 2 naming the module and the problem when the registry is not valid', async () => {
    const result = await runMain(['handlers', '--handlers', BROKEN_REGISTRY], { DATABASE_PATH: dbIn(tempDir()) });
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/broken\/not-defined\.ts: entry 0 is a function \(forgotDefineHandler\), not a handler made by defineHandler/);
    expect(result.stderr).toMatch(/broken\/no-type\.ts: entry 3 \("backups"\): the pattern "pod\.backups\.\*" takes none of the 11 event types/);
  });

  it('serve and replay refuse the same invalid registry with exit 2, before listening or reading', async () => {
    const db = dbIn(tempDir());
    for (const args of [['serve'], ['replay', '--status', 'dead']]) {
      const result = await runMain([...args, '--handlers', BROKEN_REGISTRY], { DATABASE_PATH: db, PORT: '0', HOST: '127.0.0.1' });
      expect(result.code, args[0]).toBe(2);
      expect(result.stderr).toMatch(/^podhook: the handler registry .*broken\/index\.ts is not valid:\n.*broken\/not-defined\.ts: entry 0/);
    }
    expect(existsSync(db)).toBe(false);
  });
});
