import { defineHandler } from 'podhook';
import { field, podFields } from './_fields.js';

/** `pod.backup.completed`: an encrypted backup of the pod was stored. */
export default defineHandler('pod.backup.completed', async function podBackupCompleted(event, { log }) {
  log.info({ ...podFields(event), backup_id: field(event.payload, 'backupId') ?? field(event.payload, 'backup_id'), size_bytes: field(event.payload, 'sizeBytes') ?? field(event.payload, 'size_bytes') }, 'pod backup completed');
});
