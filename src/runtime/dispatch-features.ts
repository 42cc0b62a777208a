import type { OrderStore } from '../core/delivery-store.js';
import type { AttemptGate } from '../core/dispatch/attempt-gate.js';
import type { IngestInstrument } from '../core/ingest/ingest-instrument.js';
import type { DispatchInstrument } from '../core/dispatch/dispatch-instrument.js';
import type { HandlerDefinition } from '../core/events/define-handler.js';
import type { RegistryPayloads } from '../core/events/registry-module.js';
import { createOrderGate, createOrdering, type Ordering } from '../core/order/index.js';
import type { PodhookTracing } from '../core/tracing/index.js';

export interface DispatchFeaturesOptions {
  handlers: readonly HandlerDefinition[];
  payloads?: RegistryPayloads;
  store: Pick<OrderStore, 'startOrdered'>;
  /** ORDER_HOLD_MS. */
  holdMs: number;
  /** For `podhook replay`: ordered handlers run in their key's turn with no hold (a replayed delivery is no burst). */
  replay?: boolean;
  /** Null when no OpenTelemetry SDK is registered. */
  tracing: PodhookTracing | null;
  /** The attempt span's name (`podhook.dispatch`, `podhook.replay`) and the lease owner it names. */
  span: { name: string; owner: string };
}

/** What the deployment's features add to a dispatcher or a replayer; a feature that is off adds nothing. */
export interface DispatchFeatures {
  /** The ordered handlers, when any handler is ordered (ingest stores their places, backfills requeue with them). */
  ordering?: Ordering;
  /** Ordered handlers' turn: the attempt gate. */
  gate?: AttemptGate;
  /** Traces: an instrument around attempts and handler calls. */
  instruments: DispatchInstrument[];
  /** Traces: an instrument around ingest's request, commit and outcome (the same receiver's). */
  ingestInstruments: IngestInstrument[];
}

/**
 * The one place that knows which dispatch features exist and whether each is on: the dispatcher,
 * `podhook replay` and `podhook listen` take what it gives and name none of them.
 */
export function dispatchFeatures({ handlers, payloads, store, holdMs, replay = false, tracing, span }: DispatchFeaturesOptions): DispatchFeatures {
  const ordering = createOrdering({ handlers, holdMs, fields: payloads?.fields, names: payloads?.orderFields });
  return {
    ...(ordering.active && { ordering, gate: createOrderGate({ store, ordering, holdMs: replay ? 0 : holdMs }) }),
    instruments: tracing ? [tracing.dispatch(span)] : [],
    ingestInstruments: tracing ? [tracing.ingest] : [],
  };
}
