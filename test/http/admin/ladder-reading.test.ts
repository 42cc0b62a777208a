import { describe, expect, it } from 'vitest';
import { ladderReading } from '../../../src/http/admin/ladder-reading.js';

describe('delivery_count against the sender ladder', () => {
  it('names the retry, when it was sent after the first try, and what is left', () => {
    expect(ladderReading(1)).toBe('First try: the sender has not retried it.');
    expect(ladderReading(3)).toMatch(/^Received 3 times: retry 2 of 7, sent about 6 min after the first try .* 5 retries left, the last about 22\.4 h after the first try\.$/);
    expect(ladderReading(7)).toMatch(/retry 6 of 7, sent about 10\.\d h after the first try .* 1 retry left/);
    expect(ladderReading(8)).toMatch(/the sender's final retry \(about 22\.4 h after the first try\)/);
    expect(ladderReading(12)).toMatch(/^Received 12 times: the last was the sender's final retry/);
  });
});
