import { describe, expect, it } from 'vitest';
import { createRequestBucket } from '../../src/emulator/request-bucket.js';

describe('request bucket', () => {
  it('allows the limit per window from its first request, then says how long until the window ends', () => {
    let now = 10_000;
    const bucket = createRequestBucket({ limit: 2, windowMs: 60_000, clock: () => now });
    expect(bucket.take()).toEqual({ ok: true });
    now += 30_000;
    expect(bucket.take()).toEqual({ ok: true });
    expect(bucket.take()).toEqual({ ok: false, retryAfterSeconds: 30 });
    now += 29_500;
    expect(bucket.take()).toEqual({ ok: false, retryAfterSeconds: 1 });
    now += 500; // the window that began at the first request is over
    expect(bucket.take()).toEqual({ ok: true });
    expect(bucket.take()).toEqual({ ok: true });
    expect(bucket.take()).toEqual({ ok: false, retryAfterSeconds: 60 });
    expect(bucket.counts()).toEqual({ allowed: 4, refused: 3 });
  });
});
