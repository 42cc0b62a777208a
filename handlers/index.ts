// The handler registry: every module listed explicitly (no directory scanning at run time), so
// Node and bundlers for the edge worker load the same set. Add your own modules here. The 11
// modules named for their event type are examples that log one line each,
// diagnose-failed-backup.ts one that acts on the pod service (queue diagnose, sleep, read its
// output), and page-unless-renewed.ts one that waits for a later event: edit or delete them
// (docs/handlers.md).
// The payload module `podhook schemas` generates (_payloads.ts) is passed on from here too: its
// schemas parse each payload at dispatch, its shapes catch drift at the door (docs/handlers.md).
import type { HandlerDefinition } from 'podhook';
import diagnoseFailedBackup from './diagnose-failed-backup.js';
import podActionQueued from './pod-action-queued.js';
import podActive from './pod-active.js';
import podBackupCompleted from './pod-backup-completed.js';
import podBackupFailed from './pod-backup-failed.js';
import podCreated from './pod-created.js';
import podDestroyFailed from './pod-destroy-failed.js';
import podDestroyed from './pod-destroyed.js';
import podExpiring from './pod-expiring.js';
import pageUnlessRenewed from './page-unless-renewed.js';
import podRenewalFailed from './pod-renewal-failed.js';
import podRenewed from './pod-renewed.js';
import podStatusChanged from './pod-status-changed.js';

export const handlers: readonly HandlerDefinition[] = [
  podCreated,
  podActive,
  podDestroyed,
  podDestroyFailed,
  podActionQueued,
  podStatusChanged,
  podRenewed,
  podRenewalFailed,
  podExpiring,
  podBackupCompleted,
  podBackupFailed,
  diagnoseFailedBackup,
  pageUnlessRenewed,
];

/**
 * Where every type carries the pod id, named once: `ctx.waitForEvent` (page-unless-renewed.ts)
 * and `order: 'pod'` read it there. `pod.id` is where `podhook trigger`'s payloads carry it; the
 * service does not publish its shapes, so check yours (`podhook schemas` learns the place from
 * real deliveries as `payloadFields`) and change this, or delete it to use what was learned.
 */
export const orderFields = { podId: 'pod.id', occurredAt: null };

export { payloadSchemas, PAYLOAD_SHAPES as payloadShapes, payloadFields } from './_payloads.js';
