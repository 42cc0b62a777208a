import type pg from 'pg';
import type { ClaimResult, NewDelivery } from '../../core/delivery.js';
import { claimParams } from '../row-mapping.js';
import { CLAIM_BUMP, CLAIM_INSERT, ORDER_ENTRIES } from './hot-statements.js';

const sameBytes = (a: Uint8Array, b: Uint8Array) => a.length === b.length && a.every((x, i) => x === b[i]);

/**
 * Claims a batch: one multi-row insert, then (only when some rows were not new) one update
 * counting the copies of stored ids. Each statement is atomic on its own and there is no
 * transaction around them, so a batch with no copies is one round trip. Should the update fail
 * after the insert committed, the whole batch is refused (503): its new rows are stored, and the
 * sender's retry is answered as a duplicate; nothing is acknowledged that is not committed. Rows
 * go in event-id order so two replicas' batches lock ids in the same order and cannot deadlock.
 */
export async function claimRows(pool: pg.Pool, batch: readonly NewDelivery[]): Promise<ClaimResult[]> {
  if (batch.length === 0) return [];
  const order = batch.map((_, i) => i).sort((a, b) => (batch[a]!.eventId < batch[b]!.eventId ? -1 : batch[a]!.eventId > batch[b]!.eventId ? 1 : a - b));
  const rows = order.map((i) => claimParams(batch[i]!));
  const column = <K extends keyof (typeof rows)[number]>(k: K) => rows.map((r) => r[k]);
  const inserted = (
    await pool.query<{ event_id: string; content_digest: Buffer }>({
      ...CLAIM_INSERT,
      values: [
        column('eventId'), column('eventType'), column('signatureT'), column('contentDigest'), column('body'), column('headers'),
        column('receivedAt'), column('status'), column('lastError'), column('nextAttemptAt'), column('leaseOwner'), column('leaseUntil'),
        column('claimId'), column('traceParent'),
      ],
    })
  ).rows;
  const isNew = rows.map(() => false);
  for (const ins of inserted) {
    const at = rows.findIndex((r, i) => !isNew[i] && r.eventId === ins.event_id && sameBytes(r.contentDigest, ins.content_digest));
    if (at >= 0) isNew[at] = true;
  }
  // Ordered handlers' places, for the new rows only. Should this fail after the insert committed,
  // the batch is refused (503) and the sender's copy is a duplicate: the dispatcher then makes the
  // missing rows when it first runs the delivery.
  const entries = order.flatMap((i, k) => (isNew[k] ? (batch[i]!.order ?? []).map((e) => ({ ...e, eventId: rows[k]!.eventId })) : []));
  if (entries.length > 0) {
    await pool.query({ ...ORDER_ENTRIES, values: [entries.map((e) => e.handler), entries.map((e) => e.key), entries.map((e) => e.eventId), entries.map((e) => e.at)] });
  }
  // Every row not inserted may be a copy of a stored id: grouped by id and type, in order.
  const groups = new Map<string, { eventId: string; eventType: string; at: number[]; last: number }>();
  rows.forEach((r, i) => {
    if (isNew[i]) return;
    const key = `${r.eventId}\u0000${r.eventType}`;
    const g = groups.get(key) ?? { eventId: r.eventId, eventType: r.eventType, at: [], last: r.receivedAt };
    g.at.push(i);
    g.last = r.receivedAt;
    groups.set(key, g);
  });
  const sorted: ClaimResult[] = isNew.map((n) => (n ? { outcome: 'new' } : { outcome: 'conflict' }));
  if (groups.size > 0) {
    const list = [...groups.values()];
    const bumped = (
      await pool.query<{ event_id: string; event_type: string; delivery_count: number }>({
        ...CLAIM_BUMP,
        values: [list.map((g) => g.eventId), list.map((g) => g.eventType), list.map((g) => g.at.length), list.map((g) => g.last)],
      })
    ).rows;
    for (const b of bumped) {
      const g = list.find((x) => x.eventId === b.event_id && x.eventType === b.event_type)!;
      const first = Number(b.delivery_count) - g.at.length;
      g.at.forEach((i, k) => (sorted[i] = { outcome: 'duplicate', deliveryCount: first + k + 1 }));
    }
  }
  const results: ClaimResult[] = new Array(batch.length);
  order.forEach((i, k) => (results[i] = sorted[k]!));
  return results;
}
