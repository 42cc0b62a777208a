import { defineHandler } from 'podhook';
import { field, podFields } from './_fields.js';

/** `pod.renewed`: the pod's billing period was renewed. */
export default defineHandler('pod.renewed', async function podRenewed(event, { log }) {
  log.info({ ...podFields(event), expires_at: field(event.payload, 'expires_at'), auto_renew: field(event.payload, 'auto_renew') }, 'pod renewed');
});
