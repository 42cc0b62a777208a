import { defineHandler } from 'podhook';
import { field, podFields } from './_fields.js';

/** `pod.status.changed`: the pod's status changed. */
export default defineHandler('pod.status.changed', async function podStatusChanged(event, { log }) {
  log.info({ ...podFields(event), previous_status: field(event.payload, 'previous_status') }, 'pod status changed');
});
