import { describe, expect, it } from 'vitest';
import { createFailingWindow } from '../../../src/core/alerts/failing-window.js';

const MIN = 60_000;

describe('failing-handler window (more than half of at least 5 runs in 15 minutes)', () => {
  const make = (start = 100 * MIN) => {
    let now = start;
    const window = createFailingWindow({ clock: () => now });
    return { window, advance: (ms: number) => (now += ms) };
  };

  it('needs at least 5 runs', () => {
    const { window } = make();
    for (let i = 0; i < 4; i++) expect(window.record('h', true)).toBeNull();
    expect(window.record('h', true)).toEqual({ handler: 'h', runs: 5, failures: 5 });
  });

  it('needs more than half to fail: 3 of 6 is not failing, 4 of 7 is', () => {
    const { window } = make();
    for (let i = 0; i < 3; i++) window.record('h', false);
    expect(window.record('h', true)).toBeNull();
    expect(window.record('h', true)).toBeNull();
    expect(window.record('h', true)).toBeNull(); // 3 of 6
    expect(window.record('h', true)).toEqual({ handler: 'h', runs: 7, failures: 4 });
    // A success never reports, and handlers are counted apart.
    expect(window.record('h', false)).toBeNull();
    expect(window.record('other', true)).toBeNull();
  });

  it('forgets runs older than the window', () => {
    const { window, advance } = make();
    for (let i = 0; i < 4; i++) window.record('h', true);
    advance(15 * MIN);
    // The four failures are 15 minutes old: out of the window.
    expect(window.record('h', true)).toBeNull();
    for (let i = 0; i < 3; i++) window.record('h', true);
    expect(window.record('h', true)).toEqual({ handler: 'h', runs: 5, failures: 5 });
  });

  it('keeps runs up to 14 minutes old (per-minute buckets)', () => {
    const { window, advance } = make();
    for (let i = 0; i < 4; i++) window.record('h', true);
    advance(14 * MIN);
    expect(window.record('h', true)).toEqual({ handler: 'h', runs: 5, failures: 5 });
  });
});
