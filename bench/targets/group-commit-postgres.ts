// "group-commit-postgres-podhook-work": group-commit-podhook-work (group-commit.ts with
// GROUP_COMMIT_WORK=podhook) on PostgreSQL: a lean durable receiver written by hand with none of
// podhook's code, doing the durable work podhook does for each delivery, on one PostgreSQL server
// through `pg` (DATABASE_URL). Bare node:http; the same HMAC check and window (_verify.ts); the
// content digest, kept headers and parsed body; podhook's PostgreSQL schema (every migration of
// drizzle/postgres/, in its journal's order); the three log lines (pino, asynchronous writes in
// 4 KiB chunks).
//
// Every request that arrives in one event-loop turn is inserted in one transaction: one
// statement, so one round trip and one commit (PostgreSQL's durable defaults: the WAL flushed
// before the answer), a multi-row insert of array parameters (`unnest`, fixed text whatever the
// batch's size) with its lease and claim id, `on conflict do nothing returning event_id`. Each
// request is answered once that statement has returned. The handler run's write (what podhook's
// completeDispatch writes for a first attempt that succeeds: the outcome update fenced by the
// claim id, with the run's duration and replica; podhook writes no handler_runs or
// handler_attempts row then, src/core/dispatch/decide-outcome.ts) joins the next batch's
// statement, or goes alone after 10 ms when no delivery comes. GROUP_COMMIT_LEDGER=rows writes
// those two rows as well (what podhook writes for a run after a failure). Two connections, at
// most two statements in flight (as podhook's two claim batches in flight): requests arriving
// while both wait on their commit gather into the next batch. No handler module, no metrics, no request ids, no NOTIFY, no error paths beyond 503.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import pg from 'pg';
import { pino } from 'pino';
import { verifyPlain } from './_verify.js';

const secret = process.env.SVC_WEBHOOK_SECRET!;
const LEASE_MS = 35_000;
const OWNER = `group-commit-postgres-pid${process.pid}`;
const HANDLER = 'podStatusChanged';
const OUTCOME_DELAY_MS = 10;
const IN_FLIGHT = 2;
const ledgerRows = process.env.GROUP_COMMIT_LEDGER === 'rows';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL!, max: IN_FLIGHT });
const log = pino({ base: { service: 'group-commit-postgres' } }, pino.destination({ dest: 1, sync: false, minLength: 4096 }));
const utf8 = new TextDecoder('utf-8', { fatal: true });

// podhook's schema: every migration, in the journal's order.
const migrations = new URL('../../drizzle/postgres/', import.meta.url);
const journal = JSON.parse(readFileSync(new URL('meta/_journal.json', migrations), 'utf8')) as { entries: { tag: string }[] };
for (const { tag } of journal.entries) {
  for (const statement of readFileSync(new URL(`${tag}.sql`, migrations), 'utf8').split('--> statement-breakpoint')) {
    await pool.query(statement);
  }
}

/** GROUP_COMMIT_LEDGER=rows: the handler_runs and handler_attempts rows too, as podhook writes them for a failed or retried run. */
const LEDGER_ROWS = `, runs as (
  insert into handler_runs (event_id, handler, status, attempts, last_error, updated_at, duration_ms, failures)
  select event_id, '${HANDLER}', 'succeeded', 1, null, processed_at, duration_ms, 0 from done
  on conflict (event_id, handler) do update
  set status = excluded.status, attempts = excluded.attempts, last_error = excluded.last_error, updated_at = excluded.updated_at,
      duration_ms = excluded.duration_ms, failures = handler_runs.failures + excluded.failures
), history as (
  insert into handler_attempts (event_id, handler, attempt, outcome, error, duration_ms, finished_at, ran_by)
  select event_id, '${HANDLER}', 1, 'succeeded', null, duration_ms, processed_at, '${OWNER}' from done
  on conflict do nothing
)`;

/**
 * One batch, one statement: the finished handler runs' outcomes (fenced by the claim id), then
 * the new deliveries, leased to this process. Returns the ids inserted.
 */
const COMMIT = {
  name: 'group_commit_batch',
  text: `with o as (
  select * from unnest($1::text[], $2::text[], $3::int8[], $4::int4[]) as o(event_id, claim_id, processed_at, duration_ms)
), done as (
  update deliveries d
  set status = 'processed', attempts = 1, last_error = null, next_attempt_at = null, processed_at = o.processed_at,
      duration_ms = o.duration_ms, ran_by = '${OWNER}', lease_owner = null, lease_until = null, claim_id = null
  from o where d.event_id = o.event_id and d.claim_id = o.claim_id
  returning d.event_id, o.processed_at, o.duration_ms
)${ledgerRows ? LEDGER_ROWS : ''}
insert into deliveries
  (event_id, event_type, signature_t, content_digest, body, headers, received_at, last_received_at,
   status, next_attempt_at, lease_owner, lease_until, claim_id)
select i.event_id, i.event_type, i.signature_t, i.content_digest, i.body, i.headers, $11::int8, $11::int8,
       'queued', $11::int8, '${OWNER}', $12::int8, i.claim_id
from unnest($5::text[], $6::text[], $7::int8[], $8::bytea[], $9::bytea[], $10::text[], $13::text[])
  as i(event_id, event_type, signature_t, content_digest, body, headers, claim_id)
on conflict do nothing
returning event_id`,
};

interface Pending {
  id: string;
  type: string;
  body: Buffer;
  t: number;
  res: ServerResponse;
  digest: Buffer;
  headers: string;
  payload: { data?: { pod?: { id?: string; status?: string } } };
  inserted?: boolean;
  claimId?: string;
  processedAt?: number;
  durationMs?: number;
}

let claims = 0;
let incoming: Pending[] = [];
let finished: Pending[] = [];
let scheduled = false;
let lazyTimer: ReturnType<typeof setTimeout> | undefined;
let inFlight = 0;
/** Outcomes alone are due (their 10 ms passed) but both connections were busy. */
let outcomesDue = false;

/** Flushes now, or once a connection is free (what arrives meanwhile joins that batch). */
function kick() {
  if (inFlight < IN_FLIGHT) flush();
}

function flush() {
  if (incoming.length === 0 && finished.length === 0) return;
  clearTimeout(lazyTimer);
  lazyTimer = undefined;
  outcomesDue = false;
  const batch = incoming;
  const outcomes = finished;
  incoming = [];
  finished = [];
  const now = Date.now();
  for (const p of batch) p.claimId = `${OWNER}.${(++claims).toString(36)}`;
  inFlight++;
  pool
    .query<{ event_id: string }>({
      ...COMMIT,
      values: [
        outcomes.map((p) => p.id), outcomes.map((p) => p.claimId), outcomes.map((p) => p.processedAt), outcomes.map((p) => p.durationMs),
        batch.map((p) => p.id), batch.map((p) => p.type), batch.map((p) => p.t), batch.map((p) => p.digest), batch.map((p) => p.body),
        batch.map((p) => p.headers), now, now + LEASE_MS, batch.map((p) => p.claimId),
      ],
    })
    .then(
      ({ rows }) => {
        const fresh = new Set(rows.map((r) => r.event_id));
        for (const p of batch) {
          p.inserted = fresh.delete(p.id); // a second copy of one id in the batch is a duplicate
          answer(p, 200);
        }
      },
      () => {
        for (const p of batch) answer(p, 503); // rolled back: nothing of this batch is stored
      },
    )
    .finally(() => {
      inFlight--;
      if (incoming.length > 0 || outcomesDue) flush();
    });
}

function answer(p: Pending, status: number) {
  const body = status === 200 ? `{"received":true,"event_id":"${p.id}","duplicate":${!p.inserted}}` : '{"error":{"code":"store_unavailable"}}';
  p.res.writeHead(status, { 'content-type': 'application/json', 'content-length': body.length });
  p.res.end(body);
  if (status !== 200) return;
  log.info({ event_id: p.id, event_type: p.type, outcome: p.inserted ? 'accepted' : 'duplicate', status }, 'delivery');
  if (!p.inserted) return;
  setImmediate(() => {
    const started = performance.now();
    const pod = p.payload.data?.pod;
    log.info({ event_id: p.id, event_type: p.type, handler: HANDLER, attempt: 1, pod_id: pod?.id, status: pod?.status }, 'pod status changed');
    p.durationMs = Math.round(performance.now() - started);
    log.info({ event_id: p.id, event_type: p.type, handler: HANDLER, attempt: 1, duration_ms: p.durationMs, outcome: 'succeeded' }, 'handler run');
    p.processedAt = Date.now();
    finished.push(p);
    lazyTimer ??= setTimeout(() => {
      lazyTimer = undefined;
      outcomesDue = true;
      kick();
    }, OUTCOME_DELAY_MS);
  });
}

function receive(req: IncomingMessage, res: ServerResponse, body: Buffer) {
  const signature = req.headers['x-svc-signature'];
  const t = verifyPlain(typeof signature === 'string' ? signature : undefined, body, secret);
  if (t === null) {
    res.writeHead(401).end();
    return;
  }
  const kept: Record<string, string | string[] | undefined> = { ...req.headers };
  delete kept['x-svc-signature'];
  incoming.push({
    id: String(req.headers['x-svc-event-id']),
    type: String(req.headers['x-svc-event-type']),
    body,
    t,
    res,
    digest: createHash('sha256').update(`${t}.`).update(body).digest(),
    headers: JSON.stringify(kept),
    payload: JSON.parse(utf8.decode(body)) as Pending['payload'],
  });
  if (!scheduled) {
    scheduled = true;
    setImmediate(() => {
      scheduled = false;
      kick();
    });
  }
}

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => receive(req, res, chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)));
}).listen(Number(process.env.PORT), '127.0.0.1', () => console.log('listening'));

// The bench stops PostgreSQL targets with SIGTERM and reads the tables' counters once their
// connections have closed (backends report them as they exit).
process.once('SIGTERM', () => {
  server.close();
  server.closeAllConnections();
  void pool.end().finally(() => process.exit(0));
});
