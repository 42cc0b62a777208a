import { describe, expect, it } from 'vitest';
import { createHeartbeat } from '../../../src/core/alerts/heartbeat.js';
import { openSqliteStore } from '../../../src/store/sqlite/sqlite-store.js';
import { dbIn, useTempDir } from '../../helpers/temp-dir.js';

const MIN = 60_000;
const tempDir = useTempDir();

describe('heartbeat (a real SQLite file)', () => {
  it('finds a downtime when the previous heartbeat is older than the threshold, and remembers the last one', async () => {
    const { store, close } = openSqliteStore(dbIn(tempDir()));
    let now = Date.UTC(2026, 10, 25, 1, 0);
    const heartbeat = createHeartbeat({ store, clock: () => now, downtimeThresholdMs: 5 * MIN });
    try {
      // The first start ever: nothing to compare with.
      expect(await heartbeat.beat()).toBeNull();
      now += 30_000;
      expect(await heartbeat.beat()).toBeNull();
      const lastBeat = now;
      // Exactly the threshold is not a downtime; one millisecond more is.
      now = lastBeat + 5 * MIN;
      expect(await heartbeat.beat()).toBeNull();
      now += 5 * MIN + 1;
      expect(await heartbeat.beat()).toEqual({ from: lastBeat + 5 * MIN, until: now });
      expect(await heartbeat.lastDowntime()).toEqual({ from: lastBeat + 5 * MIN, until: now });
      // Later beats keep the last downtime for the inspector.
      now += 30_000;
      expect(await heartbeat.beat()).toBeNull();
      expect(await heartbeat.lastDowntime()).toEqual({ from: lastBeat + 5 * MIN, until: now - 30_000 });
    } finally {
      close();
    }
  });

  it('has no downtime to show before one happened', async () => {
    const { store, close } = openSqliteStore(dbIn(tempDir()));
    expect(await createHeartbeat({ store, clock: () => 0, downtimeThresholdMs: MIN }).lastDowntime()).toBeNull();
    close();
  });
});
