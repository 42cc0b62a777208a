import { describe, expect, it } from 'vitest';
import { createAlertRateLimit } from '../../../src/core/alerts/rate-limit.js';

describe('alert rate limit', () => {
  it('sends one per kind and key per interval, then counts the ones held back', () => {
    let now = 1_000_000;
    const limit = createAlertRateLimit({ clock: () => now, minIntervalMs: 10 * 60_000 });
    expect(limit.take('dead_letter', 'h')).toEqual({ send: true, suppressed: 0 });
    expect(limit.take('dead_letter', 'h')).toEqual({ send: false });
    // Another key or kind has its own allowance.
    expect(limit.take('dead_letter', 'other')).toEqual({ send: true, suppressed: 0 });
    expect(limit.take('handler_failing', 'h')).toEqual({ send: true, suppressed: 0 });
    now += 10 * 60_000 - 1;
    expect(limit.take('dead_letter', 'h')).toEqual({ send: false });
    now += 1;
    expect(limit.take('dead_letter', 'h')).toEqual({ send: true, suppressed: 2 });
    expect(limit.take('dead_letter', 'h')).toEqual({ send: false });
  });

  it('stays bounded with many keys, forgetting the ones whose interval has passed', () => {
    let now = 0;
    const limit = createAlertRateLimit({ clock: () => now, minIntervalMs: 1000 });
    for (let i = 0; i < 1000; i++) limit.take('dead_letter', `k${i}`);
    now = 1000;
    expect(limit.take('dead_letter', 'new')).toEqual({ send: true, suppressed: 0 });
    // k0 was forgotten with the others: it may alert again at once.
    expect(limit.take('dead_letter', 'k0')).toEqual({ send: true, suppressed: 0 });
    expect(limit.take('dead_letter', 'new')).toEqual({ send: false });
  });
});
