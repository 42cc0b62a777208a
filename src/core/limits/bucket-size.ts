import type { RateBucketSize } from './rate-bucket-store.js';

/** The account's buckets at the service (spec: Limits), by the name podhook keeps each under. */
export type BucketName = 'writes' | 'reads' | 'key_mints';

export const BUCKET_NAMES: readonly BucketName[] = ['writes', 'reads', 'key_mints'];

/** The spec's values: 60 writes a minute, 240 reads a minute, 30 key mints an hour, per account. */
export const DEFAULT_BUCKET_SIZES: Readonly<Record<BucketName, RateBucketSize>> = {
  writes: { capacity: 60, windowMs: 60_000 },
  reads: { capacity: 240, windowMs: 60_000 },
  key_mints: { capacity: 30, windowMs: 3_600_000 },
};

const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 } as const;
const SIZE = /^(\d{1,6})\/(\d{1,6})?(ms|s|m|h)$/;

/**
 * A bucket size as the variables write it: `<calls>/<window>`, the window a number and a unit
 * (`ms`, `s`, `m`, `h`; the number may be left out for 1): `60/1m`, `240/m`, `30/1h`, `60/2s`.
 * Null when the text is not one, or gives no call or no time.
 */
export function parseBucketSize(text: string): RateBucketSize | null {
  const m = SIZE.exec(text.trim());
  if (!m) return null;
  const capacity = Number(m[1]);
  const windowMs = Number(m[2] ?? '1') * UNIT_MS[m[3] as keyof typeof UNIT_MS];
  return capacity >= 1 && windowMs >= 1 ? { capacity, windowMs } : null;
}

/** A bucket size as the variables write it (`60/1m`), for messages and docs. */
export function formatBucketSize({ capacity, windowMs }: RateBucketSize): string {
  if (windowMs % 3_600_000 === 0) return `${capacity}/${windowMs / 3_600_000}h`;
  if (windowMs % 60_000 === 0) return `${capacity}/${windowMs / 60_000}m`;
  if (windowMs % 1_000 === 0) return `${capacity}/${windowMs / 1_000}s`;
  return `${capacity}/${windowMs}ms`;
}
