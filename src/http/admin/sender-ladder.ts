/** The sender's retry schedule: minutes between tries after the first fails (spec, Webhooks rule 3). */
export const SENDER_RETRY_MINUTES = [1, 5, 15, 60, 180, 360, 720] as const;

const ago = (minutes: number) => (minutes < 60 ? `${minutes} min` : `${+(minutes / 60).toFixed(1)} h`);

/**
 * What a delivery count says against the sender's ladder: which try the last one was, when it
 * came after the first, and what is left before the sender gives up and disables the webhook.
 */
export function ladderReading(deliveryCount: number): string {
  const retries = deliveryCount - 1;
  const total = SENDER_RETRY_MINUTES.reduce((a, b) => a + b, 0);
  if (retries <= 0) return 'First try: the sender has not retried it.';
  const at = SENDER_RETRY_MINUTES.slice(0, Math.min(retries, SENDER_RETRY_MINUTES.length)).reduce((a, b) => a + b, 0);
  if (retries >= SENDER_RETRY_MINUTES.length) {
    return `Received ${deliveryCount} times: the last was the sender's final retry (about ${ago(at)} after the first try); had it failed, the sender would have disabled the webhook.`;
  }
  const left = SENDER_RETRY_MINUTES.length - retries;
  return `Received ${deliveryCount} times: retry ${retries} of ${SENDER_RETRY_MINUTES.length}, sent about ${ago(at)} after the first try (earlier answers did not reach the sender as a success). ${left} ${left === 1 ? 'retry' : 'retries'} left, the last about ${ago(total)} after the first try.`;
}
