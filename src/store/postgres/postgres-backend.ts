import { sql } from 'drizzle-orm';
import { drizzle, type NodePgDatabase } from 'drizzle-orm/node-postgres';
import type pg from 'pg';
import { createBatcher } from '../../core/dispatch/batcher.js';
import type { ClaimResult, NewDelivery } from '../../core/delivery.js';
import { outcomeParams, toDelivery, type DeliveryRow } from '../row-mapping.js';
import { buildEachCall, type StoreBackend } from '../store-backend.js';
import { orderStatements } from '../order-statements.js';
import { claimRows } from './claim-rows.js';
import { COMPLETE_DISPATCH, LEASE_DUE, PRUNE, RENEW_LEASES } from './hot-statements.js';
import * as schema from './schema.js';
import { runShared, sharedDatabase } from './shared-database.js';

export type PostgresDatabase = NodePgDatabase & { $client: pg.Pool };

export interface PostgresBackendOptions {
  /**
   * Group commit: claims waiting at the flush share one multi-row insert. Node passes
   * `setImmediate`; without it each claim is its own statement (the CLI tools).
   */
  schedule?: (flush: () => void) => void;
}

/**
 * Claim batches a replica may have at the server at once: with one, a replica sat idle while its
 * batch's round trip and commit were under way; a second keeps it reading requests meanwhile.
 */
const CLAIMS_IN_FLIGHT = 2;

/** A raw `deliveries` row (snake_case, as `returning *` gives it) as the schema's row. */
function fromRaw(r: Record<string, unknown>): DeliveryRow {
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
    status: r.status as DeliveryRow['status'],
    attempts: Number(r.attempts),
    lastError: r.last_error as string | null,
    nextAttemptAt: n(r.next_attempt_at),
    leaseOwner: r.lease_owner as string | null,
    leaseUntil: n(r.lease_until),
    claimId: r.claim_id as string | null,
    processedAt: n(r.processed_at),
    durationMs: n(r.duration_ms),
    conflictWith: r.conflict_with as string | null,
    ranBy: r.ran_by as string | null,
    traceParent: r.trace_parent as string | null,
    drift: r.drift as string | null,
  };
}

/**
 * PostgreSQL's backend through node-postgres: the hot path and prune as fixed SQL with array
 * parameters (hot-statements.ts, one round trip per batch); the shared methods build on drizzle.
 */
export function postgresBackend(pgDb: PostgresDatabase, { schedule }: PostgresBackendOptions = {}): StoreBackend {
  const pool = pgDb.$client;
  const db = sharedDatabase(pgDb);
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

  const order = orderStatements(schema, buildEachCall);
  return {
    db,
    tables: schema,
    prepare: buildEachCall,
    // One transaction; each statement is built on it, so it runs on the transaction's connection.
    atomic: (build) =>
      pgDb.transaction(async (tx) => {
        const results: unknown[][] = [];
        for (const query of build(sharedDatabase(tx))) results.push(await runShared(query));
        return results;
      }),
    // Byte order on ids, as SQLite compares them, whatever the database's collation.
    byteOrder: (id) => sql`${id} collate "C"`,
    claim,
    async leaseDue({ owner, claimId, now, leaseMs, limit }) {
      const { rows } = await pool.query({ ...LEASE_DUE, values: [owner, now + leaseMs, now, limit, claimId ?? owner] });
      return rows.map((r) => toDelivery(fromRaw(r))).sort((a, b) => (a.nextAttemptAt ?? 0) - (b.nextAttemptAt ?? 0));
    },
    async completeDispatch(outcomes) {
      if (outcomes.length === 0) return [];
      const all = outcomes.map(outcomeParams);
      const o = all.map((x) => x.outcome);
      const ran = all.flatMap((x) => x.runs);
      const history = all.flatMap((x) => [...x.history, ...x.runs]);
      // One ledger row per (event, handler): the last outcome of a batch wins, its failures add up, as in sequence.
      const byRun = new Map<string, (typeof history)[number] & { failures: number }>();
      for (const r of ran) {
        const key = `${r.eventId}\u0000${r.handler}`;
        byRun.set(key, { ...r, failures: (byRun.get(key)?.failures ?? 0) + (r.status === 'failed' ? 1 : 0) });
      }
      const runs = [...byRun.values()];
      const complete = {
        ...COMPLETE_DISPATCH,
        values: [
          o.map((x) => x.eventId), o.map((x) => x.claimId), o.map((x) => x.status), o.map((x) => x.attempts), o.map((x) => x.lastError),
          o.map((x) => x.nextAttemptAt), o.map((x) => x.processedAt), o.map((x) => x.durationMs), o.map((x) => x.ranBy),
          runs.map((r) => r.eventId), runs.map((r) => r.handler), runs.map((r) => r.status), runs.map((r) => r.attempts),
          runs.map((r) => r.lastError), runs.map((r) => r.updatedAt), runs.map((r) => r.durationMs), runs.map((r) => r.failures),
          history.map((r) => r.eventId), history.map((r) => r.handler), history.map((r) => r.attempts), history.map((r) => r.outcome),
          history.map((r) => r.lastError), history.map((r) => r.durationMs), history.map((r) => r.updatedAt), history.map((r) => r.ranBy),
        ],
      };
      if (!outcomes.some((x) => x.order && x.order.length > 0)) {
        const { rows } = await pool.query<{ event_id: string }>(complete);
        return rows.map((r) => r.event_id);
      }
      // Ordered handlers settle their keys before the outcome (fenced by its claim), in one transaction with it.
      const client = await pool.connect();
      try {
        await client.query('begin');
        const tx = sharedDatabase(drizzle(client));
        const settling = outcomes.map((x) => order.settling(x));
        for (const s of settling) for (const q of s.before(tx)) await runShared(q);
        const { rows } = await client.query<{ event_id: string }>(complete);
        for (const s of settling) for (const q of s.after(tx)) await runShared(q);
        await client.query('commit');
        return rows.map((r) => r.event_id);
      } catch (error) {
        await client.query('rollback').catch(() => {});
        throw error;
      } finally {
        client.release();
      }
    },
    async renewLeases({ leases, until }) {
      if (leases.length === 0) return [];
      const { rows } = await pool.query<{ event_id: string }>({
        ...RENEW_LEASES,
        values: [until, leases.map((l) => l.eventId), leases.map((l) => l.claimId)],
      });
      return rows.map((r) => r.event_id);
    },
    async prune({ before, limit }) {
      const { rows } = await pool.query<{ event_id: string }>({ ...PRUNE, values: [before, limit] });
      return rows.length;
    },
    async ping() {
      await pool.query('select 1');
    },
    // One clock for every replica: the rate buckets' times are read here, not on each host.
    async databaseNow() {
      const { rows } = await pool.query<{ now: string }>("select (extract(epoch from clock_timestamp()) * 1000)::bigint as now");
      return Number(rows[0]!.now);
    },
  };
}
