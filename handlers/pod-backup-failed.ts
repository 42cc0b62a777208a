import { defineHandler } from 'podhook';
import { field, podFields } from './_fields.js';

/** `pod.backup.failed`: a backup of the pod failed; the last good backup is older than you think. */
export default defineHandler('pod.backup.failed', async function podBackupFailed(event, { log }) {
  log.warn({ ...podFields(event), backup_id: field(event.payload, 'backupId') ?? field(event.payload, 'backup_id'), error: field(event.payload, 'error') }, 'pod backup failed');
});
