import { describe, expect, it } from 'vitest';
import { retryOutlook } from '../../../src/core/alerts/retry-outlook.js';
import { GIVE_UP_AFTER_MS } from '../../../src/core/ingest/sender-retry-ladder.js';

const MIN = 60_000;
const T = Date.UTC(2026, 10, 25, 1, 0);

describe('a downtime read against the sender retry ladder', () => {
  it.each([
    // A delivery that waited just over a rung waits the whole next step after the receiver is back.
    [0.5, 1],
    [1, 1],
    [1.5, 5],
    [10, 15],
    [21, 15],
    [22, 60],
    [120, 180],
    [300, 360],
    [700, 720],
    [1341, 720],
  ])('after %s min down, retries of everything sent meanwhile are due within %s min of coming back', (downMin, waitMin) => {
    const o = retryOutlook({ from: T, until: T + downMin * MIN });
    expect(o.downtimeMs).toBe(downMin * MIN);
    expect(o.retriesDueBy).toBe(T + downMin * MIN + waitMin * MIN);
    expect(o.probablyDisabled).toBe(false);
    expect(o.disabledAround).toBeNull();
  });

  it('calls the webhook probably disabled only past the whole ladder (22.35 h), from the first delivery of the downtime', () => {
    expect(retryOutlook({ from: T, until: T + GIVE_UP_AFTER_MS }).probablyDisabled).toBe(false);
    const past = retryOutlook({ from: T, until: T + GIVE_UP_AFTER_MS + 1 });
    expect(past).toEqual({ downtimeMs: GIVE_UP_AFTER_MS + 1, retriesDueBy: null, probablyDisabled: true, disabledAround: T + GIVE_UP_AFTER_MS });
    expect(retryOutlook({ from: T, until: T + 3 * 86_400_000 }).disabledAround).toBe(T + GIVE_UP_AFTER_MS);
  });

  it('has nothing to say about a downtime of zero length', () => {
    expect(retryOutlook({ from: T, until: T })).toMatchObject({ downtimeMs: 0, retriesDueBy: null, probablyDisabled: false });
  });
});
