import type { ClaimResult, DispatchOutcome, NewDelivery } from '../../core/delivery-store.js';
import type { DeliveryRow } from '../row-mapping.js';
import type { ReturningQuery } from '../store-backend.js';
import type { LeaseParams } from './statements.js';

/**
 * What differs between the SQLite dialect's two drivers: how the hot writes run atomically. The
 * statements are the same (`statements.ts`); better-sqlite3 prepares them once and group-commits
 * them (sync-driver.ts), D1 sends each write as one atomic `batch` (../d1/batch-driver.ts: it
 * has no interactive transactions).
 */
export interface StoreDriver {
  claim(batch: readonly NewDelivery[]): Promise<ClaimResult[]>;
  leaseDue(params: LeaseParams): Promise<DeliveryRow[]>;
  /** Resolves with the ids whose outcome was recorded (their claim still held them). */
  completeDispatch(outcomes: readonly DispatchOutcome[]): Promise<string[]>;
  /** Runs statements (each with RETURNING) atomically; resolves with each one's rows (`durable: false`: no sync of its own). */
  atomic(queries: readonly ReturningQuery[], options?: { durable?: boolean }): Promise<unknown[][]>;
}
