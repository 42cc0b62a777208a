/**
 * The PostgreSQL statements of the hot path, as SQL text (graphile-worker style: the dialect's
 * SQL in one place, each statement fixed text with array parameters, so a batch of any size is
 * one prepared statement and one round trip). Column lists follow schema.ts; a column added
 * there (a status, a lease column, a claim id) is added to the matching list here.
 */

/** Wakes idle replicas when new work is committed (the dispatcher also polls, for retries coming due). */
export const WORK_CHANNEL = 'podhook_work';

/**
 * One multi-row insert per group-committed batch. `ON CONFLICT DO NOTHING` covers the id and the
 * signed content; a copy another replica inserts at the same moment waits for that commit, then
 * is skipped, so one event id is `new` once across replicas. A new row no dispatcher has leased
 * yet wakes idle replicas (NOTIFY, sent at commit, at most once per transaction).
 */
export const CLAIM_INSERT = {
  name: 'podhook_claim_insert',
  text: `with ins as (
insert into deliveries
  (event_id, event_type, signature_t, content_digest, body, headers, received_at, last_received_at,
   status, last_error, next_attempt_at, lease_owner, lease_until, claim_id, trace_parent)
select i.event_id, i.event_type, i.signature_t, i.content_digest, i.body, i.headers, i.received_at, i.received_at,
       i.status, i.last_error, i.next_attempt_at, i.lease_owner, i.lease_until, i.claim_id, i.trace_parent
from unnest($1::text[], $2::text[], $3::int8[], $4::bytea[], $5::bytea[], $6::text[], $7::int8[],
            $8::text[], $9::text[], $10::int8[], $11::text[], $12::int8[], $13::text[], $14::text[]) with ordinality
  as i(event_id, event_type, signature_t, content_digest, body, headers, received_at,
       status, last_error, next_attempt_at, lease_owner, lease_until, claim_id, trace_parent, ord)
order by i.ord
on conflict do nothing
returning event_id, content_digest, lease_owner, status
), wake as (
  select pg_notify('${WORK_CHANNEL}', '') from (select 1 from ins where lease_owner is null and status = 'queued' limit 1) as due
)
select ins.event_id, ins.content_digest from ins left join wake on true`,
};

/** Counts the copies of stored ids (same type only): `n` more deliveries per id, the last one's time kept. */
export const CLAIM_BUMP = {
  name: 'podhook_claim_bump',
  text: `update deliveries d
set delivery_count = d.delivery_count + b.n, last_received_at = b.last_received_at
from unnest($1::text[], $2::text[], $3::int4[], $4::int8[]) as b(event_id, event_type, n, last_received_at)
where d.event_id = b.event_id and d.event_type = b.event_type
returning d.event_id, d.event_type, d.delivery_count`,
};

/**
 * Leases due rows: `FOR UPDATE SKIP LOCKED` lets replicas lease side by side without waiting on
 * each other or leasing one row twice; `lease_until` frees a dead replica's rows.
 */
export const LEASE_DUE = {
  name: 'podhook_lease_due',
  text: `update deliveries set lease_owner = $1, lease_until = $2, claim_id = $5
where event_id in (
  select event_id from deliveries
  where status in ('queued', 'failed') and next_attempt_at <= $3 and (lease_until is null or lease_until < $3)
  order by next_attempt_at
  limit $4
  for update skip locked)
returning *`,
};

/**
 * Extends the leases still held by the claims given (Convoy's claim id as a fencing token): a row
 * another replica leased since, under its own claim, is not renewed, and its id is not returned.
 */
export const RENEW_LEASES = {
  name: 'podhook_renew_leases',
  text: `update deliveries d set lease_until = $1
from unnest($2::text[], $3::text[]) as r(event_id, claim_id)
where d.event_id = r.event_id and d.claim_id = r.claim_id
returning d.event_id`,
};

/**
 * Records outcomes, their ledger runs and their run history in one statement, fenced by the
 * claim id: a replica that lost its lease writes neither the delivery nor its handler runs over
 * the new claim's. The ledger keeps one row per handler (a batch's last run of it, failures
 * summed); the history one per run.
 */
export const COMPLETE_DISPATCH = {
  name: 'podhook_complete_dispatch',
  text: `with o as (
  select * from unnest($1::text[], $2::text[], $3::text[], $4::int4[], $5::text[], $6::int8[], $7::int8[], $8::int4[], $9::text[])
    as o(event_id, claim_id, status, attempts, last_error, next_attempt_at, processed_at, duration_ms, ran_by)
), done as (
  update deliveries d
  set status = o.status, attempts = o.attempts, last_error = o.last_error, next_attempt_at = o.next_attempt_at,
      processed_at = o.processed_at, duration_ms = o.duration_ms, ran_by = o.ran_by,
      lease_owner = null, lease_until = null, claim_id = null
  from o where d.event_id = o.event_id and d.claim_id = o.claim_id
  returning d.event_id
), r as (
  select * from unnest($10::text[], $11::text[], $12::text[], $13::int4[], $14::text[], $15::int8[], $16::int4[], $17::int4[])
    as r(event_id, handler, status, attempts, last_error, updated_at, duration_ms, failures)
  where r.event_id in (select event_id from done)
), runs as (
insert into handler_runs (event_id, handler, status, attempts, last_error, updated_at, duration_ms, failures)
select r.event_id, r.handler, r.status, r.attempts, r.last_error, r.updated_at, r.duration_ms, r.failures from r
on conflict (event_id, handler) do update
set status = excluded.status, attempts = excluded.attempts, last_error = excluded.last_error, updated_at = excluded.updated_at,
    duration_ms = excluded.duration_ms, failures = handler_runs.failures + excluded.failures
), history as (
insert into handler_attempts (event_id, handler, attempt, outcome, error, duration_ms, finished_at, ran_by)
select a.event_id, a.handler, a.attempt, a.outcome, a.error, a.duration_ms, a.finished_at, a.ran_by
from unnest($18::text[], $19::text[], $20::int4[], $21::text[], $22::text[], $23::int4[], $24::int8[], $25::text[])
  as a(event_id, handler, attempt, outcome, error, duration_ms, finished_at, ran_by)
where a.event_id in (select event_id from done)
on conflict do nothing
)
select event_id from done`,
};

/**
 * Deletes up to $2 processed or ignored deliveries received before $1, with their ledger rows, in
 * one statement. SKIP LOCKED: replicas pruning at once take different rows instead of waiting on
 * each other.
 */
export const PRUNE = {
  name: 'podhook_prune',
  text: `with victims as (
  select event_id from deliveries
  where received_at < $1 and status in ('processed', 'ignored')
  order by received_at
  limit $2
  for update skip locked
), runs as (
  delete from handler_runs where event_id in (select event_id from victims)
), history as (
  delete from handler_attempts where event_id in (select event_id from victims)
), ordered as (
  delete from ordered_runs where event_id in (select event_id from victims)
), steps as (
  delete from handler_steps where event_id in (select event_id from victims)
)
delete from deliveries where event_id in (select event_id from victims)
returning event_id`,
};

/** The ordered handlers' rows of the new deliveries of a claim batch (only when some handler is ordered). */
export const ORDER_ENTRIES = {
  name: 'podhook_order_entries',
  text: `insert into ordered_runs (handler, order_key, event_id, at, received_at, state)
select e.handler, e.order_key, e.event_id, e.at, d.received_at, 'pending'
from unnest($1::text[], $2::text[], $3::text[], $4::int8[]) as e(handler, order_key, event_id, at)
join deliveries d on d.event_id = e.event_id
on conflict do nothing`,
};
