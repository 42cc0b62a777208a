/**
 * The sender's retry ladder: minutes between a failed delivery and its next try, seven retries
 * after the first attempt (spec: Webhook deliveries, Events rule 3, Limits "Retry schedule").
 * Past the last one the service sets `disabled_by_us_at` and stops delivering to the webhook.
 */
export const SENDER_RETRY_MINUTES = [1, 5, 15, 60, 180, 360, 720] as const;

const MINUTE_MS = 60_000;

/** When each retry comes, counted from the first attempt (ms): 1, 6, 21, 81, 261, 621, 1341 minutes. */
export const RETRY_OFFSETS_MS: readonly number[] = SENDER_RETRY_MINUTES.reduce<number[]>(
  (offsets, minutes) => [...offsets, (offsets.at(-1) ?? 0) + minutes * MINUTE_MS],
  [],
);

/** The last retry of a delivery, after its first attempt: about 22.4 hours. Past it the service disables the webhook. */
export const GIVE_UP_AFTER_MS = RETRY_OFFSETS_MS.at(-1)!;
