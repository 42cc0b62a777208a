import { sql } from 'drizzle-orm';
import type { customType, index, integer, primaryKey, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';

/** Raw bytes (SQLite BLOB, PostgreSQL bytea), read back as a plain Uint8Array in every driver. */
type BytesBuilder = ReturnType<typeof customType<{ data: Uint8Array; driverData: Uint8Array | ArrayBuffer | number[] }>>;

/**
 * One dialect's table and column builders, as `defineTables` uses them. Typed as SQLite's
 * builders: PostgreSQL's have the same calls (table, text with an enum, integer, notNull,
 * default, primaryKey, unique, partial indexes), and its kit (postgres/schema.ts) differs only
 * where the types do: `int64` is a bigint read as a number, `bytes` a bytea.
 */
export interface DialectKit {
  table: typeof sqliteTable;
  text: typeof text;
  /** Counts, attempts, durations: 32-bit. */
  int: typeof integer;
  /** Epoch milliseconds and Unix seconds: past 2^31, so 64-bit where the dialect distinguishes. */
  int64: typeof integer;
  bytes: BytesBuilder;
  index: typeof index;
  uniqueIndex: typeof uniqueIndex;
  primaryKey: typeof primaryKey;
}

/**
 * podhook's tables, defined once for every dialect (the same names, columns, defaults and
 * partial indexes): sqlite/schema.ts and postgres/schema.ts build them with their kit, and
 * drizzle-kit generates each dialect's migrations from those (`npm run db:generate`,
 * `npm run db:generate:postgres`).
 */
export function defineTables(k: DialectKit) {
  /** The durable inbox: one row per event id, kept byte-exact for replay. Times are epoch milliseconds. */
  const deliveries = k.table(
    'deliveries',
    {
      eventId: k.text('event_id').primaryKey(),
      eventType: k.text('event_type').notNull(),
      signatureT: k.int64('signature_t').notNull(),
      /** SHA-256 of `<t>.<body>`: the same signed content under another id is a conflict (quarantined). */
      contentDigest: k.bytes('content_digest').notNull(),
      body: k.bytes('body').notNull(),
      /** JSON object of the request headers kept for replay (never the signature). */
      headers: k.text('headers').notNull(),
      receivedAt: k.int64('received_at').notNull(),
      lastReceivedAt: k.int64('last_received_at').notNull(),
      deliveryCount: k.int('delivery_count').notNull().default(1),
      status: k.text('status', { enum: ['queued', 'processed', 'failed', 'dead', 'ignored', 'quarantined'] }).notNull(),
      attempts: k.int('attempts').notNull().default(0),
      lastError: k.text('last_error'),
      /** When the dispatcher should next run it (queued: at once; failed: after backoff). */
      nextAttemptAt: k.int64('next_attempt_at'),
      /** Dispatcher lease: the owner may run its handlers until `lease_until`. */
      leaseOwner: k.text('lease_owner'),
      leaseUntil: k.int64('lease_until'),
      /** The claim holding the lease: its renewals and outcome match it (a fencing token). */
      claimId: k.text('claim_id'),
      processedAt: k.int64('processed_at'),
      /** How long the last dispatch attempt's handlers ran (they run together: the slowest one). */
      durationMs: k.int('duration_ms'),
      /** The stored delivery a quarantined copy conflicts with; such a copy may repeat its signed content. */
      conflictWith: k.text('conflict_with'),
      /** Which dispatcher (replica) ran its last attempt: the lease owner that recorded the outcome. */
      ranBy: k.text('ran_by'),
      /** The ingest span's context (W3C `traceparent`) when tracing is on; null otherwise. Attempts link to it. */
      traceParent: k.text('trace_parent'),
      /**
       * How its payload differed from its type's learned shape when it arrived (JSON: path, kind,
       * message; never a value from the body); null when it fit, or no shape was learned for it.
       * Written after the answer, only for drifted deliveries.
       */
      drift: k.text('drift'),
    },
    (t) => [
      // A replay carries the same t, so (t, digest) identifies signed content as well as the digest
      // alone, and t leads: inserts land at the right edge of the index instead of at random
      // pages, so its cost does not grow with the table.
      // Partial: a quarantined copy repeats the signed content of the delivery it conflicts with.
      k.uniqueIndex('deliveries_signed_content_uq').on(t.signatureT, t.contentDigest).where(sql`${t.conflictWith} is null`),
      // Partial: only rows waiting for dispatch are indexed, so leasing stays cheap however many
      // processed rows the table holds, and a row leaves the index when it is processed.
      k.index('deliveries_due_idx').on(t.nextAttemptAt).where(sql`${t.status} in ('queued', 'failed')`),
      // Queue depth and dead letters for /metrics without scanning processed rows.
      k.index('deliveries_open_status_idx').on(t.status).where(sql`${t.status} in ('queued', 'failed', 'dead')`),
      k.index('deliveries_received_idx').on(t.receivedAt),
      // Partial: drifted deliveries are few, so `drift=true` pages through them without scanning the rest.
      k.index('deliveries_drift_idx').on(t.receivedAt).where(sql`${t.drift} is not null`),
    ],
  );

  /** Per-handler ledger: a success is recorded once, so a retry re-runs only the handlers that failed. */
  const handlerRuns = k.table(
    'handler_runs',
    {
      eventId: k.text('event_id').notNull(),
      handler: k.text('handler').notNull(),
      /** `queued`: an operator asked for this handler to run again (admin replay). */
      status: k.text('status', { enum: ['succeeded', 'failed', 'queued'] }).notNull(),
      attempts: k.int('attempts').notNull().default(0),
      lastError: k.text('last_error'),
      updatedAt: k.int64('updated_at').notNull(),
      /** The last run's duration (null for a row written before it ran, e.g. `queued`). */
      durationMs: k.int('duration_ms'),
      /** How many of the `attempts` runs failed (the row keeps only the last run's outcome). */
      failures: k.int('failures').notNull().default(0),
    },
    (t) => [k.primaryKey({ columns: [t.eventId, t.handler] })],
  );

  /**
   * Every handler run after a delivery's first failure, one row each (attempt by attempt), for the
   * operator's history. A delivery processed at its first attempt writes none: its row says every
   * handler succeeded once (`processed_at`, `duration_ms`, `ran_by`). Pruned with its delivery.
   */
  const handlerAttempts = k.table(
    'handler_attempts',
    {
      eventId: k.text('event_id').notNull(),
      handler: k.text('handler').notNull(),
      /** This handler's run count for the event: 1 on its first run. */
      attempt: k.int('attempt').notNull(),
      outcome: k.text('outcome', { enum: ['succeeded', 'failed', 'timeout', 'invalid_payload', 'skipped', 'interrupted', 'parked'] }).notNull(),
      error: k.text('error'),
      durationMs: k.int('duration_ms'),
      finishedAt: k.int64('finished_at').notNull(),
      /** The dispatcher (replica) that ran it. */
      ranBy: k.text('ran_by').notNull(),
    },
    (t) => [k.primaryKey({ columns: [t.eventId, t.handler, t.attempt] })],
  );

  /**
   * Ordered handlers (`order`): each delivery's place in its key's order, one row per handler,
   * key and delivery, written with the claim (or when first dispatched). `pending` until its run
   * is recorded: `done` (it ran), `skipped` (stale, not run) or `dead` (its delivery died). A
   * delivery runs only when no pending row of its key has an earlier `at`. Pruned with its delivery.
   */
  const orderedRuns = k.table(
    'ordered_runs',
    {
      handler: k.text('handler').notNull(),
      orderKey: k.text('order_key').notNull(),
      eventId: k.text('event_id').notNull(),
      /** When the event happened (epoch ms): the order. */
      at: k.int64('at').notNull(),
      /** When the delivery was first received: runs wait ORDER_HOLD_MS from it. */
      receivedAt: k.int64('received_at').notNull(),
      state: k.text('state', { enum: ['pending', 'done', 'skipped', 'dead'] }).notNull().default('pending'),
    },
    (t) => [
      k.primaryKey({ columns: [t.handler, t.orderKey, t.eventId] }),
      // What a key waits on: its pending rows, earliest first.
      k.index('ordered_runs_pending_idx').on(t.handler, t.orderKey, t.at).where(sql`${t.state} = 'pending'`),
      k.index('ordered_runs_event_idx').on(t.eventId),
    ],
  );

  /**
   * One row per ordered handler and key: which delivery runs for it now (the key's lock, held
   * while that delivery's lease lives) and the newest event that ran (the stale guard).
   */
  const orderKeys = k.table(
    'order_keys',
    {
      handler: k.text('handler').notNull(),
      orderKey: k.text('order_key').notNull(),
      runningEventId: k.text('running_event_id'),
      newestAt: k.int64('newest_at'),
      newestEventId: k.text('newest_event_id'),
    },
    (t) => [k.primaryKey({ columns: [t.handler, t.orderKey] })],
  );

  /** Signing secrets kept by `podhook register` / `podhook secrets add`; all are accepted at once. */
  const webhookSecrets = k.table('webhook_secrets', {
    id: k.text('id').primaryKey(),
    webhookId: k.text('webhook_id'),
    url: k.text('url'),
    /** JSON array of event types, or null for every event. */
    eventTypes: k.text('event_types'),
    secret: k.text('secret').notNull(),
    fingerprint: k.text('fingerprint').notNull().unique(),
    createdAt: k.int64('created_at').notNull(),
  });

  /**
   * The receiver's heartbeat (one row, `receiver`, beaten by every process every 30 s) and the
   * last downtime it revealed: a gap between heartbeats is how long nobody answered the sender.
   */
  const heartbeats = k.table('heartbeats', {
    name: k.text('name').primaryKey(),
    beatAt: k.int64('beat_at').notNull(),
    downFrom: k.int64('down_from'),
    downUntil: k.int64('down_until'),
  });

  /**
   * `podhook listen`: where each followed remote's export was last read, so a listen started again
   * fetches what was stored there meanwhile. Keyed by the remote's URL (origin and path).
   */
  const listenCursors = k.table('listen_cursors', {
    remote: k.text('remote').primaryKey(),
    /** The remote's own `x-podhook-next-cursor` (opaque here); null until a delivery was seen. */
    cursor: k.text('cursor'),
    /** Where the first listen started (epoch ms): the start again while no delivery was seen. */
    since: k.int64('since').notNull(),
    updatedAt: k.int64('updated_at').notNull(),
  });

  /**
   * Every handler a dispatching receiver has run with: written at each start (the Worker at each
   * cron run). A delivery received after a handler's `first_seen_at` was dispatched with it
   * registered; one processed at its first attempt leaves no per-handler row, so this is how a
   * backfill knows where history ends for a handler added late.
   */
  const handlerRegistrations = k.table('handler_registrations', {
    handler: k.text('handler').primaryKey(),
    firstSeenAt: k.int64('first_seen_at').notNull(),
    lastSeenAt: k.int64('last_seen_at').notNull(),
  });

  /**
   * `podhook backfill`: one handler run over stored history, asked for through the store and done by
   * whichever receiver holds its lease, one page at a time from `cursor` (the last delivery handed
   * to the dispatcher, received time then id). `step` counts the pages: each page's requeue is
   * fenced by it and by the claim, so a page is requeued once.
   */
  const backfills = k.table(
    'backfills',
    {
      id: k.text('id').primaryKey(),
      handler: k.text('handler').notNull(),
      /** Deliveries received at or after this time (epoch ms); null: from the oldest. */
      since: k.int64('since'),
      /** … and before this one; null until a receiver resolves it: when the handler was first seen running. */
      until: k.int64('until'),
      /** One event type the handler takes; null: every type it takes. */
      eventType: k.text('event_type'),
      /** Deliveries handed to the dispatcher per second at most; null: the default pacing. */
      rate: k.int('rate'),
      state: k.text('state', { enum: ['running', 'done', 'cancelled', 'failed'] }).notNull(),
      cursorReceivedAt: k.int64('cursor_received_at'),
      cursorEventId: k.text('cursor_event_id'),
      step: k.int('step').notNull().default(0),
      /** Deliveries in its range when it was started (or its `until` resolved). */
      total: k.int('total').notNull().default(0),
      /** Handed to the dispatcher for the handler. */
      requeued: k.int('requeued').notNull().default(0),
      /** Passed over: the handler already handled them (or a replay held them at that moment). */
      skipped: k.int('skipped').notNull().default(0),
      /** JSON [[at, requeued + skipped], …] of the last minute's steps: the rate and the estimated end. */
      recent: k.text('recent'),
      createdAt: k.int64('created_at').notNull(),
      updatedAt: k.int64('updated_at').notNull(),
      finishedAt: k.int64('finished_at'),
      error: k.text('error'),
      leaseOwner: k.text('lease_owner'),
      claimId: k.text('claim_id'),
      leaseUntil: k.int64('lease_until'),
    },
    (t) => [
      // One running backfill per handler: a second start is refused.
      k.uniqueIndex('backfills_running_uq').on(t.handler).where(sql`${t.state} = 'running'`),
      k.index('backfills_created_idx').on(t.createdAt),
    ],
  );

  /**
   * The account's limits at the service (writes, reads, key mints), shared by every process and
   * replica: each bucket is `capacity` rows, one per token, and a token taken at `taken_at` is back
   * one window later. Taking one moves the bucket's earliest token on, in one UPDATE
   * (store/rate-bucket-methods.ts), so no interval of one window ever holds more than `capacity` calls.
   */
  const rateTokens = k.table(
    'rate_tokens',
    {
      /** Whose limits: one account's buckets (`default` unless a deployment talks to several). */
      account: k.text('account').notNull(),
      /** `writes`, `reads` or `key_mints`. */
      bucket: k.text('bucket').notNull(),
      /** 0 to capacity − 1; tokens past a lowered capacity are left alone. */
      token: k.int('token').notNull(),
      /** When it was (or will be, for a wait that reserved it) last used (epoch ms); 0: never. */
      takenAt: k.int64('taken_at').notNull().default(0),
    },
    (t) => [k.primaryKey({ columns: [t.account, t.bucket, t.token] })],
  );

  /**
   * The service's compute API key (`podhook secrets add --api-key`), one per account: sent only as
   * `X-API-Key`, kept apart from the signing secrets so it is never taken for one.
   */
  const apiKeys = k.table('api_keys', {
    account: k.text('account').primaryKey(),
    secret: k.text('secret').notNull(),
    /** The first 12 hex of its SHA-256: what `podhook secrets list` shows instead of it. */
    fingerprint: k.text('fingerprint').notNull(),
    createdAt: k.int64('created_at').notNull(),
  });

  /**
   * Durable steps (`ctx.step`, `ctx.sleep`): one row per step of a handler's run of a delivery,
   * by position, its result recorded once done. Pruned with its delivery.
   */
  const handlerSteps = k.table(
    'handler_steps',
    {
      eventId: k.text('event_id').notNull(),
      handler: k.text('handler').notNull(),
      /** Its position in the run, from 1. */
      seq: k.int('seq').notNull(),
      name: k.text('name').notNull(),
      kind: k.text('kind', { enum: ['step', 'sleep', 'wait'] }).notNull(),
      state: k.text('state', { enum: ['done', 'failed', 'sleeping'] }).notNull(),
      attempts: k.int('attempts').notNull(),
      /** `{"v":…}` JSON, or a sealed text when `sensitive` (AES-256-GCM, STEP_ENCRYPTION_KEY). */
      result: k.text('result'),
      sensitive: k.int('sensitive').notNull().default(0),
      resultBytes: k.int('result_bytes'),
      error: k.text('error'),
      wakeAt: k.int64('wake_at'),
      startedAt: k.int64('started_at').notNull(),
      finishedAt: k.int64('finished_at'),
      durationMs: k.int('duration_ms'),
    },
    (t) => [
      k.primaryKey({ columns: [t.eventId, t.handler, t.seq] }),
      // Partial: the parked runs, for metrics and `podhook deliveries`.
      k.index('handler_steps_sleeping_idx').on(t.wakeAt).where(sql`${t.state} = 'sleeping'`),
    ],
  );

  /**
   * `ctx.waitForEvent`: one row per wait of a parked run (its step's place), kept while it waits.
   * A new delivery about `pod_id` of one of `types` received after `after_at` wakes the run (its
   * delivery due now, `woken_by` the delivery); the run itself finds its match among the stored
   * deliveries, and drops the row once matched or timed out.
   */
  const eventWaits = k.table(
    'event_waits',
    {
      eventId: k.text('event_id').notNull(),
      handler: k.text('handler').notNull(),
      seq: k.int('seq').notNull(),
      name: k.text('name').notNull(),
      podId: k.text('pod_id').notNull(),
      /** The event types waited for, comma-separated. */
      types: k.text('types').notNull(),
      /** The waiting delivery's receipt time (epoch ms): only deliveries received after it match. */
      afterAt: k.int64('after_at').notNull(),
      /** When the wait times out (epoch ms). */
      untilAt: k.int64('until_at').notNull(),
      createdAt: k.int64('created_at').notNull(),
      /** The delivery whose ingest woke the run (null until one did). */
      wokenBy: k.text('woken_by'),
    },
    (t) => [k.primaryKey({ columns: [t.eventId, t.handler, t.seq] }), k.index('event_waits_pod_idx').on(t.podId)],
  );

  return { deliveries, handlerRuns, handlerAttempts, orderedRuns, orderKeys, webhookSecrets, heartbeats, listenCursors, handlerRegistrations, backfills, rateTokens, apiKeys, handlerSteps, eventWaits };
}
