import { defineHandler } from 'podhook';
import { field, podFields } from './_fields.js';

/** `pod.renewal_failed`: renewal failed: the pod expires unless payment is fixed. */
export default defineHandler('pod.renewal_failed', async function podRenewalFailed(event, { log }) {
  log.warn({ ...podFields(event), expires_at: field(event.payload, 'expires_at'), error: field(event.payload, 'error') }, 'pod renewal failed');
});
