import type { ClaimResult, Delivery, DeliveryStatus, NewDelivery } from './delivery.js';

export interface ListDeliveriesOptions {
  status?: DeliveryStatus;
  eventType?: string;
  /** Only deliveries received at or after this time (ms). */
  since?: number;
  limit?: number;
}

/** A signing secret kept in the database by `podhook register` or `podhook secrets add`. */
export interface StoredSecret {
  id: string;
  webhookId: string | null;
  url: string | null;
  eventTypes: string[] | null;
  secret: string;
  fingerprint: string;
  createdAt: number;
}

/**
 * The store contract, shared by every backend (better-sqlite3 on Node, D1 on the edge) and
 * checked by one contract suite. All methods are async so one interface fits both drivers.
 */
export interface DeliveryStore {
  /**
   * Claims each delivery atomically, all in one transaction (one commit, one sync):
   * a new event id is inserted; a stored id with the same type counts one more delivery;
   * signed content already stored under another id, or an id stored with another type, is a conflict.
   * Resolves only after the commit is durable; rejects if it is not (nothing is acknowledged).
   */
  claim(deliveries: readonly NewDelivery[]): Promise<ClaimResult[]>;
  get(eventId: string): Promise<Delivery | null>;
  /** Newest first. */
  list(options?: ListDeliveriesOptions): Promise<Delivery[]>;
  /** Secrets stored in the database, oldest first. */
  listSecrets(): Promise<StoredSecret[]>;
  /** Stores a secret; resolves false when one with the same fingerprint is already there. */
  addSecret(secret: StoredSecret): Promise<boolean>;
  /** Removes secrets by id or fingerprint; resolves to how many were removed. */
  removeSecret(idOrFingerprint: string): Promise<number>;
  /** Throws when the store cannot be reached. */
  ping(): Promise<void>;
}

export type { ClaimResult, Delivery, DeliveryStatus, NewDelivery };
