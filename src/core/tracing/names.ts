/**
 * The span and attribute names podhook records, in one place (docs/tracing.md lists them).
 * HTTP names are OpenTelemetry's semantic conventions; podhook's own are under `podhook.`.
 */
export { ATTR_ERROR_TYPE, ATTR_EXCEPTION_MESSAGE, ATTR_EXCEPTION_TYPE, ATTR_HTTP_REQUEST_METHOD, ATTR_HTTP_RESPONSE_STATUS_CODE, ATTR_HTTP_ROUTE } from '@opentelemetry/semantic-conventions';

/** The instrumentation scope of every podhook span. */
export const TRACER_NAME = 'podhook';

export const SPAN = {
  /** The store commit under an ingest span (group commit included: the wait for the batch's sync). */
  claim: 'podhook.store.claim',
  /** A conflicting delivery stored as quarantined, under its ingest span. */
  quarantine: 'podhook.store.quarantine',
  /** One dispatch attempt of a stored delivery (a trace root, linked to its receipt). */
  dispatch: 'podhook.dispatch',
  /** `podhook replay` running a stored delivery again (a trace root, linked to its receipt). */
  replay: 'podhook.replay',
  /** One handler's run within an attempt; the handler's own code runs in its context. */
  handler: 'podhook.handler',
  /** One durable step's function (`ctx.step`), under its handler run's span. */
  step: 'podhook.step',
} as const;

export const ATTR = {
  eventId: 'podhook.event_id',
  eventType: 'podhook.event_type',
  /**
   * How it ended. Ingest: `new`, `duplicate`, `quarantined`, `ignored`, `dead` or the refusal's
   * reason (`signature_mismatch`, …). Claim: `new`, `duplicate`, `conflict`. Dispatch: the
   * delivery's status afterwards (`processed`, `failed`, `dead`, `ignored`), `interrupted` or
   * `lease_lost`, `queued` (an ordered handler waits for its turn). Handler: `succeeded`, `failed`,
   * `timeout`, `invalid_payload`, `interrupted`.
   */
  outcome: 'podhook.outcome',
  /** Dispatch: the delivery's attempt number; handler: that handler's run number for the event. */
  attempt: 'podhook.attempt',
  handler: 'podhook.handler',
  /** The dispatcher (replica) that ran the attempt: its lease owner id. */
  dispatcher: 'podhook.dispatcher',
  /** An ordered handler's run: whether a newer event of its key already ran (`order.stale`). */
  orderStale: 'podhook.order.stale',
  /** A durable step's name and its position in its run. */
  step: 'podhook.step.name',
  stepSeq: 'podhook.step.seq',
} as const;
