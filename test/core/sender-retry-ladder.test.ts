import { describe, expect, it } from 'vitest';
import { GIVE_UP_AFTER_MS, RETRY_OFFSETS_MS, SENDER_RETRY_MINUTES } from '../../src/core/ingest/sender-retry-ladder.js';

const MIN = 60_000;

describe('the sender retry ladder', () => {
  it('is 1, 5, 15, 60, 180, 360, 720 minutes apart, the last retry 1341 minutes (about 22.4 h) after the first attempt', () => {
    expect(SENDER_RETRY_MINUTES).toEqual([1, 5, 15, 60, 180, 360, 720]);
    expect(RETRY_OFFSETS_MS.map((ms) => ms / MIN)).toEqual([1, 6, 21, 81, 261, 621, 1341]);
    expect(GIVE_UP_AFTER_MS).toBe(1341 * MIN);
    expect(GIVE_UP_AFTER_MS / 3_600_000).toBeCloseTo(22.35, 2);
  });
});
