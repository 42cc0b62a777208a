import { defineHandler } from 'podhook';
import { field, podFields } from './_fields.js';

/** `pod.created`: a pod was created; it starts in `provisioning`. */
export default defineHandler('pod.created', async function podCreated(event, { log }) {
  log.info({ ...podFields(event), model: field(event.payload, 'model'), tier: field(event.payload, 'tier') }, 'pod created');
});
