import { defineHandler } from 'podhook';
import { field, podFields } from './_fields.js';

/** `pod.destroyed`: the pod is gone; release whatever you keep for it. */
export default defineHandler('pod.destroyed', async function podDestroyed(event, { log }) {
  log.info({ ...podFields(event), reason: field(event.payload, 'reason') }, 'pod destroyed');
});
