import { and, asc, desc, eq, gt, inArray, isNull, lt, or, sql } from 'drizzle-orm';
import { drizzle, type NodePgDatabase } from 'drizzle-orm/node-postgres';
import type pg from 'pg';
import { createBatcher } from '../../core/batcher.js';
import type { ClaimResult, DeliveryStore } from '../../core/delivery-store.js';
import type { NewDelivery } from '../../core/delivery.js';
import { deliveryFilters, downtimeColumns, fromSecretRow, heartbeatRecord, importedRow, importResult, secretMatch, secretRow } from '../row-values.js';
import { claimParams, outcomeParams, QUARANTINED_ERROR, toDelivery, toQuarantineResult } from '../statements.js';
import { postgresAdminMethods } from './postgres-admin.js';
import { CLAIM_BUMP, CLAIM_INSERT, COMPLETE_DISPATCH, LEASE_DUE, RENEW_LEASES } from './hot-statements.js';
import * as schema from './schema.js';

const { deliveries, handlerRuns, webhookSecrets, heartbeats, listenCursors } = schema;
type Row = typeof deliveries.$inferSelect;
export type PostgresDatabase = NodePgDatabase<typeof schema> & { $client: pg.Pool };

export interface PostgresStoreOptions {
  /**
   * Group commit: claims waiting at the flush share one multi-row insert. Node passes
   * `setImmediate`; without it each claim is its own statement (the CLI tools).
   */
  schedule?: (flush: () => void) => void;
}

const RECEIVER = 'receiver';
/**
 * Claim batches a replica may have at the server at once: with one, a replica sat idle while its
 * batch's round trip and commit were under way; a second keeps it reading requests meanwhile.
 */
const CLAIMS_IN_FLIGHT = 2;
const PRUNABLE = ['processed', 'ignored'] as const;

/** A raw `deliveries` row (snake_case, as `returning *` gives it) as the schema's row. */
function fromRaw(r: Record<string, unknown>): Row {
  const n = (v: unknown) => (v === null ? null : Number(v));
  const b = (v: unknown) => new Uint8Array((v as Buffer).buffer, (v as Buffer).byteOffset, (v as Buffer).byteLength);
  return {
    eventId: r.event_id as string,
    eventType: r.event_type as string,
    signatureT: Number(r.signature_t),
    contentDigest: b(r.content_digest),
    body: b(r.body),
    headers: r.headers as string,
    receivedAt: Number(r.received_at),
    lastReceivedAt: Number(r.last_received_at),
    deliveryCount: Number(r.delivery_count),
    status: r.status as Row['status'],
    attempts: Number(r.attempts),
    lastError: r.last_error as string | null,
    nextAttemptAt: n(r.next_attempt_at),
    leaseOwner: r.lease_owner as string | null,
    leaseUntil: n(r.lease_until),
    claimId: r.claim_id as string | null,
    processedAt: n(r.processed_at),
    durationMs: n(r.duration_ms),
    conflictWith: r.conflict_with as string | null,
  };
}

const sameBytes = (a: Uint8Array, b: Uint8Array) => a.length === b.length && a.every((x, i) => x === b[i]);

/**
 * Claims a batch: one multi-row insert, then (only when some rows were not new) one update
 * counting the copies of stored ids. Each statement is atomic on its own and there is no
 * transaction around them, so a batch with no copies is one round trip. Should the update fail
 * after the insert committed, the whole batch is refused (503): its new rows are stored, and the
 * sender's retry is answered as a duplicate; nothing is acknowledged that is not committed. Rows
 * go in event-id order so two replicas' batches lock ids in the same order and cannot deadlock.
 */
async function claimRows(pool: pg.Pool, batch: readonly NewDelivery[]): Promise<ClaimResult[]> {
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
        column('claimId'),
      ],
    })
  ).rows;
  const isNew = rows.map(() => false);
  for (const ins of inserted) {
    const at = rows.findIndex((r, i) => !isNew[i] && r.eventId === ins.event_id && sameBytes(r.contentDigest, ins.content_digest));
    if (at >= 0) isNew[at] = true;
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

/** The one store interface on PostgreSQL through node-postgres and drizzle. */
export function createPostgresStore(db: PostgresDatabase, { schedule }: PostgresStoreOptions = {}): DeliveryStore {
  const pool = db.$client;
  const claim = schedule
    ? (() => {
        const submit = createBatcher<readonly NewDelivery[], ClaimResult[]>({
          execute: async (batches) => {
            const flat = await claimRows(pool, batches.flat());
            let at = 0;
            return batches.map((b) => flat.slice(at, (at += b.length)));
          },
          schedule,
          // The commit happens on the server: while one batch waits on it, the next can go.
          maxInFlight: CLAIMS_IN_FLIGHT,
        });
        return (batch: readonly NewDelivery[]) => submit(batch);
      })()
    : (batch: readonly NewDelivery[]) => claimRows(pool, batch);

  return {
    claim,
    async quarantine(delivery, alternateId) {
      const p = claimParams(delivery);
      // As src/store/statements.ts's quarantineStatements: what it conflicts with, a copy already
      // quarantined under the alternate id, else a new quarantined row; one transaction, off the hot path.
      return db.transaction(async (tx) => {
        const byId = tx.select({ id: deliveries.eventId }).from(deliveries).where(eq(deliveries.eventId, p.eventId));
        const byContent = tx
          .select({ id: deliveries.eventId })
          .from(deliveries)
          .where(and(eq(deliveries.signatureT, p.signatureT), eq(deliveries.contentDigest, p.contentDigest), isNull(deliveries.conflictWith)));
        const conflictWith = sql`coalesce((${byId}), (${byContent}))`;
        const stored = await tx
          .select({ eventId: deliveries.eventId, eventType: deliveries.eventType })
          .from(deliveries)
          .where(sql`${deliveries.eventId} = ${conflictWith}`);
        const bumped = await tx
          .update(deliveries)
          .set({ deliveryCount: sql`${deliveries.deliveryCount} + 1`, lastReceivedAt: p.receivedAt })
          .where(and(eq(deliveries.eventId, alternateId), eq(deliveries.eventType, p.eventType)))
          .returning({ deliveryCount: deliveries.deliveryCount });
        const inserted = await tx
          .insert(deliveries)
          .values({
            ...p,
            eventId: sql`case when exists (${byId}) then ${alternateId}::text else ${p.eventId}::text end`,
            lastReceivedAt: p.receivedAt,
            status: 'quarantined',
            lastError: QUARANTINED_ERROR,
            nextAttemptAt: null,
            leaseOwner: null,
            leaseUntil: null,
            conflictWith,
          })
          .onConflictDoNothing()
          .returning({ eventId: deliveries.eventId });
        return toQuarantineResult(stored, bumped, inserted);
      });
    },
    async get(eventId) {
      const [row] = await db.select().from(deliveries).where(eq(deliveries.eventId, eventId.toLowerCase())).limit(1);
      return row ? toDelivery(row) : null;
    },
    async list({ limit = 100, ...filters } = {}) {
      const rows = await db
        .select()
        .from(deliveries)
        .where(deliveryFilters(deliveries, filters))
        .orderBy(desc(deliveries.receivedAt), desc(deliveries.eventId))
        .limit(limit);
      return rows.map(toDelivery);
    },
    async listSecrets() {
      const rows = await db.select().from(webhookSecrets).orderBy(asc(webhookSecrets.createdAt), asc(webhookSecrets.id));
      return rows.map(fromSecretRow);
    },
    async addSecret(s) {
      const inserted = await db
        .insert(webhookSecrets)
        .values(secretRow(s))
        .onConflictDoNothing()
        .returning({ id: webhookSecrets.id });
      return inserted.length > 0;
    },
    async removeSecret(idOrFingerprint) {
      const removed = await db
        .delete(webhookSecrets)
        .where(secretMatch(webhookSecrets, idOrFingerprint))
        .returning({ id: webhookSecrets.id });
      return removed.length;
    },
    async ping() {
      await pool.query('select 1');
    },

    async leaseDue({ owner, claimId, now, leaseMs, limit }) {
      const { rows } = await pool.query({ ...LEASE_DUE, values: [owner, now + leaseMs, now, limit, claimId ?? owner] });
      return rows.map((r) => toDelivery(fromRaw(r))).sort((a, b) => (a.nextAttemptAt ?? 0) - (b.nextAttemptAt ?? 0));
    },
    async handlerRuns(eventIds) {
      if (eventIds.length === 0) return [];
      const rows = await db.select().from(handlerRuns).where(inArray(handlerRuns.eventId, [...eventIds]));
      return rows.map(({ eventId, handler, status, attempts, lastError, durationMs, updatedAt }) => ({
        eventId, handler, status, attempts, lastError, durationMs, at: updatedAt,
      }));
    },
    async completeDispatch(outcomes) {
      if (outcomes.length === 0) return [];
      const all = outcomes.map(outcomeParams);
      const o = all.map((x) => x.outcome);
      // One ledger row per (event, handler): the last outcome of a batch wins, its failures add up, as in sequence.
      const byRun = new Map<string, (typeof all)[number]['runs'][number] & { failures: number }>();
      for (const r of all.flatMap((x) => x.runs)) {
        const key = `${r.eventId}\u0000${r.handler}`;
        byRun.set(key, { ...r, failures: (byRun.get(key)?.failures ?? 0) + (r.status === 'failed' ? 1 : 0) });
      }
      const runs = [...byRun.values()];
      const { rows } = await pool.query<{ event_id: string }>({
        ...COMPLETE_DISPATCH,
        values: [
          o.map((x) => x.eventId), o.map((x) => x.claimId), o.map((x) => x.status), o.map((x) => x.attempts), o.map((x) => x.lastError),
          o.map((x) => x.nextAttemptAt), o.map((x) => x.processedAt), o.map((x) => x.durationMs),
          runs.map((r) => r.eventId), runs.map((r) => r.handler), runs.map((r) => r.status), runs.map((r) => r.attempts),
          runs.map((r) => r.lastError), runs.map((r) => r.updatedAt), runs.map((r) => r.durationMs), runs.map((r) => r.failures),
        ],
      });
      return rows.map((r) => r.event_id);
    },
    async renewLeases({ leases, until }) {
      if (leases.length === 0) return [];
      const { rows } = await pool.query<{ event_id: string }>({
        ...RENEW_LEASES,
        values: [until, leases.map((l) => l.eventId), leases.map((l) => l.claimId)],
      });
      return rows.map((r) => r.event_id);
    },
    async releaseLeases(owner) {
      const rows = await db
        .update(deliveries)
        .set({ leaseOwner: null, leaseUntil: null, claimId: null })
        .where(eq(deliveries.leaseOwner, owner))
        .returning({ eventId: deliveries.eventId });
      return rows.length;
    },
    async prune({ before, limit }) {
      return db.transaction(async (tx) => {
        const victims = await tx
          .select({ id: deliveries.eventId })
          .from(deliveries)
          .where(and(lt(deliveries.receivedAt, before), inArray(deliveries.status, [...PRUNABLE])))
          .orderBy(asc(deliveries.receivedAt))
          .limit(limit)
          .for('update', { skipLocked: true });
        if (victims.length === 0) return 0;
        const ids = victims.map((v) => v.id);
        await tx.delete(handlerRuns).where(inArray(handlerRuns.eventId, ids));
        const removed = await tx.delete(deliveries).where(inArray(deliveries.eventId, ids)).returning({ id: deliveries.eventId });
        return removed.length;
      });
    },
    async queueStats() {
      const rows = await db
        .select({ status: deliveries.status, count: sql<number>`count(*)::int` })
        .from(deliveries)
        .where(sql`${deliveries.status} in ('queued', 'failed', 'dead')`)
        .groupBy(deliveries.status);
      const stats = { queued: 0, failed: 0, dead: 0 };
      for (const r of rows) stats[r.status as keyof typeof stats] = Number(r.count);
      return stats;
    },

    async scan({ status, eventType, since, before, after, limit, order = 'asc' }) {
      // Newest first pages backwards: strictly before `after`, in descending key order.
      const [beyond, by] = order === 'asc' ? [gt, asc] : [lt, desc];
      // Byte order on ids, as SQLite compares them, whatever the database's collation.
      const id = sql`${deliveries.eventId} collate "C"`;
      const rows = await db
        .select()
        .from(deliveries)
        .where(deliveryFilters(
          deliveries,
          { status, eventType, since },
          before !== undefined ? lt(deliveries.receivedAt, before) : undefined,
          after ? or(beyond(deliveries.receivedAt, after.receivedAt), and(eq(deliveries.receivedAt, after.receivedAt), beyond(id, after.eventId))) : undefined,
        ))
        .orderBy(by(deliveries.receivedAt), by(id))
        .limit(limit);
      return rows.map(toDelivery);
    },
    async importDeliveries(rows) {
      if (rows.length === 0) return [];
      return db.transaction(async (tx) => {
        const results: ClaimResult[] = [];
        for (const d of rows) {
          const [stored] = await tx
            .select({ eventType: deliveries.eventType, deliveryCount: deliveries.deliveryCount })
            .from(deliveries)
            .where(eq(deliveries.eventId, d.eventId));
          const inserted = stored ? [] : await tx
            .insert(deliveries)
            .values(importedRow(d))
            .onConflictDoNothing()
            .returning({ eventId: deliveries.eventId });
          results.push(importResult(d, stored, inserted.length > 0));
        }
        return results;
      });
    },
    async leaseEvents({ eventIds, owner, claimId, now, leaseMs }) {
      if (eventIds.length === 0) return [];
      const rows = await db
        .update(deliveries)
        .set({ leaseOwner: owner, leaseUntil: now + leaseMs, claimId: claimId ?? owner })
        .where(and(
          inArray(deliveries.eventId, eventIds.map((id) => id.toLowerCase())),
          or(isNull(deliveries.leaseUntil), lt(deliveries.leaseUntil, now)),
        ))
        .returning();
      return rows.map(toDelivery);
    },

    async readHeartbeat() {
      const [row] = await db.select().from(heartbeats).where(eq(heartbeats.name, RECEIVER)).limit(1);
      return row ? heartbeatRecord(row) : null;
    },
    async writeHeartbeat(beatAt, downtime) {
      const down = downtimeColumns(downtime);
      await db.insert(heartbeats).values({ name: RECEIVER, beatAt, ...down }).onConflictDoUpdate({ target: heartbeats.name, set: { beatAt, ...down } });
    },

    async readListenPosition(remote) {
      const [row] = await db.select().from(listenCursors).where(eq(listenCursors.remote, remote)).limit(1);
      return row ? { cursor: row.cursor, since: row.since } : null;
    },
    async writeListenPosition(remote, { cursor, since }, now) {
      await db
        .insert(listenCursors)
        .values({ remote, cursor, since, updatedAt: now })
        .onConflictDoUpdate({ target: listenCursors.remote, set: { cursor, since, updatedAt: now } });
    },

    ...postgresAdminMethods(db),
  };
}

export { drizzle };
