import { randomBytes, randomUUID } from 'node:crypto';
import type { ImportedDelivery } from '../../src/core/delivery-store.js';

export interface HistoryOptions {
  count: number;
  /** Events spread round-robin over this many pods (`pod-0` …). */
  pods: number;
  /** When the first was received (epoch ms); each next one a second later. */
  from: number;
  eventType?: string;
  /** How long the ordered-handlers fixture's handlers work on each (its payload's `work_ms`). */
  workMs?: number;
}

/**
 * Stored history as a store holds it after an earlier registry handled it: `processed` at its
 * first attempt (no ledger rows), for `importDeliveries`, which stores thousands in one call.
 * Each pod's events happened in the order they were received (`occurred_at`).
 */
export function historyDeliveries({ count, pods, from, eventType = 'pod.status.changed', workMs = 1 }: HistoryOptions): ImportedDelivery[] {
  return Array.from({ length: count }, (_, i) => {
    const receivedAt = from + i * 1000;
    const body = new TextEncoder().encode(JSON.stringify({ pod: { id: `pod-${i % pods}` }, occurred_at: new Date(receivedAt - 500).toISOString(), work_ms: workMs }));
    return {
      eventId: randomUUID(),
      eventType,
      signatureT: Math.floor(receivedAt / 1000),
      contentDigest: randomBytes(32),
      body,
      headers: { 'content-type': 'application/json', 'x-svc-event-type': eventType },
      receivedAt,
      lastReceivedAt: receivedAt,
      deliveryCount: 1,
      status: 'processed',
      attempts: 1,
      lastError: null,
      nextAttemptAt: null,
      processedAt: receivedAt + 50,
    };
  });
}
