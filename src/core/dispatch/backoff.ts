export interface BackoffOptions {
  baseMs: number;
  maxMs: number;
  /** A number in [0, 1); injected so tests are exact. */
  random?: () => number;
}

/**
 * Delay before retry number `attempt` (1 = the first retry): exponential, capped, with "equal
 * jitter" (half fixed, half random) so retries of many events do not fire in lockstep.
 */
export function retryDelayMs(attempt: number, { baseMs, maxMs, random = Math.random }: BackoffOptions): number {
  const exp = Math.min(maxMs, baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(exp / 2 + (exp / 2) * random());
}
