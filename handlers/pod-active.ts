import { defineHandler } from 'podhook';
import { field, podFields } from './_fields.js';

/** `pod.active`: the pod finished provisioning and is serving. */
export default defineHandler('pod.active', async function podActive(event, { log }) {
  log.info({ ...podFields(event), endpoint: field(event.payload, 'base_url') }, 'pod active');
});
