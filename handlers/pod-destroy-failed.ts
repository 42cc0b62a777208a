import { defineHandler } from 'podhook';
import { field, podFields } from './_fields.js';

/** `pod.destroy_failed`: destroying the pod failed; it may still run (and bill). */
export default defineHandler('pod.destroy_failed', async function podDestroyFailed(event, { log }) {
  log.error({ ...podFields(event), error: field(event.payload, 'error') }, 'pod destroy failed');
});
