import { defineHandler } from 'podhook';
import { field, podFields } from './_fields.js';

/** `pod.expiring`: the pod's paid period ends soon. */
export default defineHandler('pod.expiring', async function podExpiring(event, { log }) {
  log.warn({ ...podFields(event), expires_at: field(event.payload, 'expires_at'), auto_renew: field(event.payload, 'auto_renew'), is_trial: field(event.payload, 'is_trial') }, 'pod expiring');
});
