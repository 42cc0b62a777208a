import type { ClaimResult, DispatchOutcome, NewDelivery } from '../core/delivery-store.js';
import type { DeliveryRow, LeaseParams } from './statements.js';

/** A statement with RETURNING, as both drivers run it in a transaction or batch. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type ReturningQuery = { all(): any };

/**
 * What differs between SQLite drivers: how the hot writes run atomically. The statements are the
 * same (`statements.ts`); better-sqlite3 prepares them once and group-commits them, D1 sends
 * each write as one atomic `batch` (it has no interactive transactions).
 */
export interface StoreDriver {
  claim(batch: readonly NewDelivery[]): Promise<ClaimResult[]>;
  leaseDue(params: LeaseParams): Promise<DeliveryRow[]>;
  /** Resolves with the ids whose outcome was recorded (their claim still held them). */
  completeDispatch(outcomes: readonly DispatchOutcome[]): Promise<string[]>;
  /** Runs statements (each with RETURNING) atomically; resolves with each one's rows. */
  atomic(queries: readonly ReturningQuery[]): Promise<unknown[][]>;
}
