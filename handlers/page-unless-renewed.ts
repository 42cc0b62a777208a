import { defineHandler } from 'podhook';
import { field, podFields } from './_fields.js';

/** A variable of the deployment (Node's environment; on the Worker, its vars through nodejs_compat). */
const env = (name: string): string | undefined => (typeof process === 'undefined' ? undefined : process.env[name]);

/**
 * `pod.renewal_failed`: page the on-call only if the pod is not renewed in time. The service
 * retries renewals and most failures heal, so the run waits (`ctx.waitForEvent`: parked, no
 * process, slot or lease held) up to `RENEWAL_GRACE` (ms, or '90s', '30m', '1h'; default 30 min)
 * for a `pod.renewed` of the same pod received after this failure. Renewed: one info line. Not:
 * a warning, and a POST to `RENEWAL_ALERT_URL` when set (once, as a step, whatever the retries).
 * podhook must know where both types carry the pod id: `orderFields` in handlers/index.ts, or the
 * `payloadFields` `podhook schemas` learns.
 */
export default defineHandler('pod.renewal_failed', async function pageUnlessRenewed(event, { log, step, waitForEvent, signal }) {
  const grace = env('RENEWAL_GRACE') || '30m';
  const renewed = await waitForEvent('renewed', { type: 'pod.renewed', timeout: grace });
  const pod = podFields(event);
  if (renewed) {
    log.info({ ...pod, renewed_event_id: renewed.id, healed_after_ms: renewed.receivedAt.getTime() - event.receivedAt.getTime() }, 'pod renewed within the grace: no page');
    return;
  }
  const error = field(event.payload, 'error');
  log.warn({ ...pod, grace, error }, 'pod not renewed within the grace: paging the on-call');
  const url = env('RENEWAL_ALERT_URL');
  if (!url) return;
  await step('page the on-call', async () => {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': event.id },
      body: JSON.stringify({ text: `pod ${pod.pod_id ?? '(unknown)'} not renewed within ${grace} of a failed renewal (${error ?? 'no error given'})`, event_id: event.id }),
      signal,
    });
    if (!res.ok) throw new Error(`RENEWAL_ALERT_URL answered ${res.status}`);
    return res.status;
  });
});
