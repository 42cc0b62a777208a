import { GIVE_UP_AFTER_MS, RETRY_OFFSETS_MS, SENDER_RETRY_MINUTES } from '../../core/ingest/sender-retry-ladder.js';

const MINUTE_MS = 60_000;
const ago = (minutes: number) => (minutes < 60 ? `${minutes} min` : `${+(minutes / 60).toFixed(1)} h`);

/**
 * What a delivery count says against the sender's ladder: which try the last one was, when it
 * came after the first, and what is left before the sender gives up and disables the webhook.
 */
export function ladderReading(deliveryCount: number): string {
  const retries = deliveryCount - 1;
  const rungs = SENDER_RETRY_MINUTES.length;
  if (retries <= 0) return 'First try: the sender has not retried it.';
  const at = RETRY_OFFSETS_MS[Math.min(retries, rungs) - 1]! / MINUTE_MS;
  if (retries >= rungs) {
    return `Received ${deliveryCount} times: the last was the sender's final retry (about ${ago(at)} after the first try); had it failed, the sender would have disabled the webhook.`;
  }
  const left = rungs - retries;
  return `Received ${deliveryCount} times: retry ${retries} of ${rungs}, sent about ${ago(at)} after the first try (earlier answers did not reach the sender as a success). ${left} ${left === 1 ? 'retry' : 'retries'} left, the last about ${ago(GIVE_UP_AFTER_MS / MINUTE_MS)} after the first try.`;
}
