import { defineHandler } from 'podhook';
import { podFields } from './_fields.js';

/** Reads of the output after the first, when it is not there yet: the service writes it 60 to 120 s after. */
const MORE_READS = 3;

/** A variable of the deployment (Node's environment; on the Worker, its vars through nodejs_compat). */
const env = (name: string): string | undefined => (typeof process === 'undefined' ? undefined : process.env[name]);

/** The SHA-256 of a JSON value, in hex: what a step records to compare outputs by. */
async function fingerprint(value: unknown): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(JSON.stringify(value ?? null)));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join('');
}

/**
 * `pod.backup.failed`: ask the pod why. Queues `diagnose` on it (once, whatever the retries: the
 * call is a step), sleeps while the pod runs it (the run is parked: no process, slot or lease is
 * held), reads its output (`last_result`, a step) and logs it; if the output is not there yet it
 * sleeps again, up to MORE_READS times. The wait is `DIAGNOSE_WAIT` (ms, or '90s', '2m'; default
 * 90 s). Needs SVC_BASE_URL and the compute API key (docs/pods-client.md); without SVC_BASE_URL it
 * logs that it skipped.
 */
export default defineHandler('pod.backup.failed', async function diagnoseFailedBackup(event, { log, pods, step, sleep }) {
  const podId = podFields(event).pod_id;
  if (!env('SVC_BASE_URL') || !podId) {
    log.info({ pod_id: podId }, podId ? 'SVC_BASE_URL is not set: no diagnose' : 'no pod id in the payload: no diagnose');
    return;
  }
  // The pod's output before this diagnose: an earlier action's output is not this one's.
  const before = await step('note last_result', async () => fingerprint(await pods.lastResult(podId)));
  await step('queue diagnose', () => pods.queueAction(podId, 'diagnose'));
  const wait = env('DIAGNOSE_WAIT') || '90s';
  for (let read = 1; read <= 1 + MORE_READS; read++) {
    await sleep('wait for output', wait);
    const output = await step('read last_result', async () => {
      const result = await pods.lastResult(podId);
      return result != null && (await fingerprint(result)) !== before ? result : null;
    });
    if (output !== null) {
      log.info({ pod_id: podId, reads: read, last_result: output }, 'diagnose output');
      return;
    }
  }
  log.warn({ pod_id: podId, reads: 1 + MORE_READS }, 'no diagnose output after the last read: giving up');
});
