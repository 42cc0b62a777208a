import { defineHandler } from 'podhook';
import { field, podFields } from './_fields.js';

/** `pod.action.queued`: a pod action (restart, stop, redeploy, update, diagnose, logs) was queued; it applies on the pod's next check-in, within about 60 s. */
export default defineHandler('pod.action.queued', async function podActionQueued(event, { log }) {
  log.info({ ...podFields(event), action: field(event.payload, 'action') ?? field(event.payload, 'queued'), result_available: field(event.payload, 'result_available') }, 'pod action queued');
});
