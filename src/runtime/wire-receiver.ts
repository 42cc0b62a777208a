import { createAlerter, type Alerter, type AlerterOptions } from '../core/alerts/alerter.js';
import { createBackfillStepper, type BackfillStepper } from '../core/backfill/index.js';
import { createHeartbeat, type Heartbeat } from '../core/alerts/heartbeat.js';
import { createFetchPost } from '../core/alerts/post-alert.js';
import type { Clock } from '../core/clock.js';
import { dispatchTuning, type Config } from '../core/config.js';
import type { DeliveryStore } from '../core/delivery-store.js';
import type { NewDelivery } from '../core/delivery.js';
import type { DispatchInstrument } from '../core/dispatch/dispatch-instrument.js';
import { createDispatcher, type Dispatcher } from '../core/dispatch/dispatcher.js';
import type { HandlerRunner } from '../core/runner/handler-runner.js';
import type { CallScope } from '../core/runner/job-runner.js';
import { instrumentIngest } from '../core/ingest/ingest-instrument.js';
import { createAsyncScope } from './async-scope.js';
import { withHandOff } from '../core/dispatch/hand-off.js';
import { pruneExpired } from '../core/dispatch/retention.js';
import { createRouter, type Router } from '../core/dispatch/router.js';
import { createDriftWatch } from '../core/shapes/drift-watch.js';
import type { DriftDifference } from '../core/shapes/payload-drift.js';
import type { HandlerDefinition } from '../core/events/define-handler.js';
import type { RegistryPayloads } from '../core/events/registry-module.js';
import type { IngestOutcome } from '../core/ingest/ingest-outcome.js';
import { createReceiver, type DeliveryConflict } from '../core/ingest/receive-delivery.js';
import type { Logger } from '../core/observability/logger.js';
import type { SecretSource } from '../core/signing/secret-source.js';
import type { SignatureCrypto } from '../core/signing/signature-crypto.js';
import { createTracing, SPAN } from '../core/tracing/index.js';
import { receiverRedactor, type Redact } from '../core/observability/redact-secrets.js';
import { storeSteps, type EventWaits, type WaitOutcome } from '../core/waits/index.js';
import { createPodsAccess } from '../core/pods/pods-access.js';
import type { AnsweringPodsClient } from '../core/pods/pods-client.js';
import type { PodsObserver } from '../core/pods/pods-observer.js';
import { handlerLevelFloor } from '../core/runner/handler-log.js';
import { createAdmin, type AdminOptions } from '../http/admin/create-admin.js';
import { createApp, type AppOptions, type PodhookApp } from '../http/create-app.js';
import { createIngestHandler, type IngestHandler } from '../http/ingest.js';
import { createReadiness } from '../http/readiness.js';
import { dispatchFeatures } from './dispatch-features.js';

/** The options every runtime takes from its caller (the serve command, the Worker entry, tests). */
export interface RuntimeOptions {
  /** The handler modules (handlers/index.ts, or a fixture registry). */
  handlers?: readonly HandlerDefinition[];
  /** What `podhook schemas` generated, as the registry re-exports it: schemas parse payloads at dispatch, shapes catch drift at the door. */
  payloads?: RegistryPayloads;
  clock?: Clock;
  /** Jitter source for retries (tests pin it). */
  random?: () => number;
  /** Observes each delivery quarantined as a conflict (besides its alert). */
  onConflict?: (conflict: DeliveryConflict) => void;
  /** The team's middleware and routes (src/app.ts's `customizeApp`). */
  customize?: (app: PodhookApp) => void;
  /** Admin options beyond the token (the Worker's export settling; tests shorten delays). */
  admin?: Partial<Omit<AdminOptions, 'token' | 'store' | 'router' | 'logger'>>;
}

/** What a runtime hands the wiring: its store, crypto, secrets and the few choices that are its own. */
export interface ReceiverParts {
  config: Config;
  store: DeliveryStore;
  logger: Logger;
  clock: Clock;
  handlers: readonly HandlerDefinition[];
  /** The registry's payload exports (see `RuntimeOptions.payloads`). */
  payloads?: RegistryPayloads;
  crypto: SignatureCrypto;
  secrets: SecretSource;
  /** This process's dispatcher lease owner. */
  owner: string;
  /** Jitter source for retries (tests pin it). */
  random?: () => number;
  /** The runtime's part of alerting: how a send waits between tries, outlives the request, and what it remembers. */
  alerting?: Pick<AlerterOptions, 'sleep' | 'defer' | 'memory'>;
  /** What watches dispatch beside the alerts (Node's metrics). */
  instruments?: readonly DispatchInstrument[];
  /** Where handler code runs (default: this thread). */
  runner?: HandlerRunner;
  /** With handlers in this thread: where a call's code runs (Node's scope ties a stray error to its call). */
  scope?: CallScope;
  /** The receiver's redactor, when the runtime built it already (Node, for its handler threads); default `receiverRedactor`. */
  redact?: Redact;
  /** A backfill was just started through the admin API (Node: its scheduler looks at once). */
  onBackfillStarted?: () => void;
  /** Watches handlers' calls to the pod service, and the runs parked on an empty bucket (Node's metrics). */
  pods?: { observer?: PodsObserver; parked?(bucket: string, retryAt: number): void };
  /**
   * How the dispatcher is held: one for the process (Node, the default), or the Worker's
   * `scopedDispatcher`, one per invocation behind one object (each holds its invocation's leases,
   * timers and handlers in flight, which Workers forbid to share), made by `make` with an owner
   * and a pod client of its own, and the invocation's concurrency when it sets one.
   */
  scopeDispatcher?: (make: (tuning?: { concurrency?: number }) => Dispatcher) => Dispatcher;
  /** How the dispatcher defers its outcome writes to share a commit (Node: setImmediate). */
  schedule?: (flush: () => void) => void;
  /** How a hand-off is adopted once the answer is on its way (Node: setImmediate; the Worker: under waitUntil, then a drain). */
  deferAdoption: (adopt: () => void) => void;
  /** How work runs once the answer is on its way, kept alive until done (Node: setImmediate; the Worker: under waitUntil). */
  afterAnswer: (work: () => Promise<void> | undefined) => void;
  /** Observes each drifted delivery's differences from its learned shape (Node's metrics). */
  onDrift?: (eventType: string, differences: readonly DriftDifference[]) => void;
  /** Asks for a drain after a replay (default: the dispatcher's wake). */
  drainSoon?: (dispatcher: Dispatcher) => void;
  /** Throws a 503 error when the store cannot take a delivery now (Node's store health). */
  assertUsable?: () => void;
  /** `/readyz`'s store check beyond a ping. */
  storeHealth?: () => 'ok' | string;
  /** `/readyz`'s check that handlers can run (Node's handler threads). */
  handlersHealth?: () => 'ok' | string;
  /** How runs a new delivery woke (ctx.waitForEvent) are run soon (default: the dispatcher's wake; the Worker: a drain of that many under the request's waitUntil). */
  drainWoken?: (dispatcher: Dispatcher, count: number) => Promise<void> | void;
  /** Told how each ctx.waitForEvent ended, and of each run a delivery woke (Node's metrics). */
  onWait?: (outcome: WaitOutcome) => void;
  /** Observes each ingest answer (Node's metrics). */
  onOutcome?: (outcome: IngestOutcome) => void;
  /** Observes each delivery quarantined as a conflict (besides its alert). */
  onConflict?: (conflict: DeliveryConflict) => void;
  /** How the ingest route reads its request (Node reads its own request object). */
  ingestSource?: AppOptions['ingestSource'];
  /** The team's middleware and routes (src/app.ts's `customizeApp`). */
  customize?: (app: PodhookApp) => void;
  /** Routes of the runtime's own (Node's `/metrics`). */
  extend?: (app: PodhookApp) => void;
  /** Admin options beyond what the wiring knows (the Worker's export settling; tests shorten delays). */
  admin?: Partial<Omit<AdminOptions, 'token' | 'store' | 'router' | 'logger'>>;
}

/** The receiver, wired: what each runtime serves and runs in the background. */
export interface WiredReceiver {
  app: PodhookApp;
  /** What the app's ingest route calls, as a plain function. */
  ingest: IngestHandler;
  router: Router;
  dispatcher: Dispatcher;
  /** Steps the backfills asked for through the store (`podhook backfill`), paced by this dispatcher's load. */
  backfills: BackfillStepper;
  /** A stepper of its own (the Worker's cron, once per invocation: a stepper holds the backfill it steps). */
  backfillStepper(): BackfillStepper;
  /** The pod client handlers' `ctx.pods` calls go through (made on first use). */
  pods: () => Promise<AnsweringPodsClient>;
  /** `ctx.waitForEvent`'s receiver side: runs' waits checked, new deliveries matched against them. */
  waits: EventWaits;
  alerts: Alerter;
  heartbeat: Heartbeat;
  /** Deletes processed and ignored deliveries older than RETENTION_DAYS, in small batches, pausing with `pause` between them. */
  prune(pause?: () => Promise<void>): Promise<number>;
}

/**
 * The steps every runtime shares, in one place: alerts and the heartbeat, the router and the
 * dispatcher, the ingest pipeline with its hand-off to the dispatcher, and the Hono app with
 * readiness and the admin API. Node builds it once; the Worker once per isolate, with a dispatcher
 * per invocation (`scopeDispatcher`).
 */
export function wireReceiver(parts: ReceiverParts): WiredReceiver {
  const { config, store, logger, clock, secrets } = parts;
  // One redactor for handlers' errors wherever they go: signing secrets (stored ones as last read) and tokens.
  const redact = parts.redact ?? receiverRedactor(config, secrets);
  // Null unless an OpenTelemetry SDK is registered (Node: OTEL_* variables): then no step below is wrapped.
  const tracing = createTracing({ redact });
  const alerts = createAlerter({
    post: config.alerts.webhookUrl ? createFetchPost(config.alerts.webhookUrl) : null,
    logger,
    clock,
    minIntervalMs: config.alerts.minIntervalMinutes * 60_000,
    redact,
    ...parts.alerting,
  });
  const heartbeat = createHeartbeat({ store, clock, downtimeThresholdMs: config.alerts.downtimeMinutes * 60_000 });

  const router = createRouter(parts.handlers);
  const podsAccess = () => createPodsAccess({ config: config.pods, store, clock, observer: parts.pods?.observer, onParked: parts.pods?.parked });
  const pods = podsAccess();
  const features = dispatchFeatures({
    handlers: parts.handlers,
    payloads: parts.payloads,
    store,
    holdMs: config.dispatch.orderHoldMs,
    tracing,
    span: { name: SPAN.dispatch, owner: parts.owner },
  });
  const { ordering } = features;
  // Steps and waits in the store; a wait's wake makes runs due now, and this dispatcher looks at once.
  const { steps, waits } = storeSteps({
    store, redact, payloads: parts.payloads, stepKey: config.stepEncryptionKey, clock, refreshMs: config.dispatch.pollMs, onWoken: (count) => (parts.drainWoken ? parts.drainWoken(dispatcher, count) : dispatcher.wake()), observe: parts.onWait,
  });
  // Steps know which of them a call comes from (nested ones refused, ctx.pods' request ids): an async context.
  const scope = parts.scope ?? createAsyncScope();
  const instruments = [...(parts.instruments ?? []), alerts.instrument, ...features.instruments, { subscriber: waits.subscriber }];
  let made = 0;
  const scoped = parts.scopeDispatcher;
  const makeDispatcher = (tuning: { concurrency?: number } = {}): Dispatcher => createDispatcher({
    store,
    router,
    logger,
    clock,
    // Scoped: an owner of its own (claim ids are `<owner>.<n>`), and a pod client that no other invocation waits on.
    owner: scoped ? `${parts.owner}.${++made}` : parts.owner,
    ...dispatchTuning(config),
    random: parts.random,
    runner: parts.runner,
    scope,
    gate: features.gate,
    instruments,
    schedule: parts.schedule,
    payloadSchemas: parts.payloads?.schemas,
    redact,
    steps,
    pods: scoped ? podsAccess() : pods,
    levelFloor: handlerLevelFloor(config.logLevel),
    ...tuning,
  });
  const dispatcher = scoped ? scoped(makeDispatcher) : makeDispatcher();

  const shapes = parts.payloads?.shapes;
  const watchDrift = shapes && createDriftWatch({ shapes, store, alerts, logger, onDrift: parts.onDrift });
  const backfillStepper = () => createBackfillStepper({
    store,
    router,
    ordering,
    dispatcher,
    owner: parts.owner,
    clock,
    logger,
    leaseMs: config.dispatch.leaseMs,
  });
  const backfills = backfillStepper();

  const { assertUsable } = parts;
  const claimOne = async (delivery: NewDelivery) => {
    assertUsable?.();
    return (await store.claim([delivery]))[0]!;
  };
  const claim = config.dispatch.enabled ? withHandOff(claimOne, dispatcher, parts.deferAdoption) : claimOne;
  const quarantine = (delivery: NewDelivery, alternateId: string) => store.quarantine(delivery, alternateId);
  // Instrumented ingest steps (traced), or the steps themselves: no instrument, no wrapper.
  const instrumented = instrumentIngest(features.ingestInstruments, { claim, quarantine, onOutcome: parts.onOutcome });
  const receive = createReceiver({
    crypto: parts.crypto,
    clock,
    secrets,
    claim: instrumented.claim,
    quarantine: instrumented.quarantine,
    onConflict: (conflict) => {
      parts.onConflict?.(conflict);
      // Named by the id it is stored under: what an operator looks up before replaying it.
      void alerts.conflict([{ eventId: conflict.storedAs, eventType: conflict.eventType }]);
    },
    admit: ordering && ((d) => void (d.order = ordering.entriesFor(d, d.payload, router.handlersFor(d.eventType)))),
    onStored: (delivery) => {
      // The sender sent something no handler will ever run: as loud as a death in dispatch.
      if (delivery.status === 'dead') void alerts.deadOnArrival({ eventId: delivery.eventId, eventType: delivery.eventType, reason: delivery.lastError ?? 'dead' });
      // Drift is looked for once the answer is on its way (the ingest contract is unchanged), and
      // only where a shape was learned: other deliveries cost nothing here.
      if (shapes && watchDrift && delivery.status === 'queued' && Object.hasOwn(shapes.types, delivery.eventType)) parts.afterAnswer(() => watchDrift(delivery));
      // A run may wait for this one (ctx.waitForEvent): one comparison while no run waits.
      if (waits.mayWake(delivery)) parts.afterAnswer(() => waits.afterStored(delivery).catch((error: unknown) => logger.warn({ err: (error as Error)?.message, event_id: delivery.eventId }, 'waking waiting runs failed')));
    },
  });
  const ingest = instrumented.request(createIngestHandler({ receive, logger, maxBodyBytes: config.maxBodyBytes, onOutcome: instrumented.onOutcome }), config.webhookPath);

  const { adminToken } = config;
  const drainSoon = parts.drainSoon ?? ((d: Dispatcher) => d.wake());
  const app = createApp({
    ingest,
    logger,
    webhookPath: config.webhookPath,
    ingestSource: parts.ingestSource,
    customize: parts.customize,
    extend: parts.extend,
    readiness: createReadiness({ store, secrets, storeHealth: parts.storeHealth, handlersHealth: parts.handlersHealth }),
    admin:
      adminToken === null
        ? undefined
        : () =>
            createAdmin({
              token: adminToken,
              store,
              router,
              logger,
              clock,
              wake: () => drainSoon(dispatcher),
              lastDowntime: () => heartbeat.lastDowntime(),
              backfillStarted: () => parts.onBackfillStarted?.(),
              ...parts.admin,
            }),
  });

  return {
    app,
    ingest,
    router,
    dispatcher,
    backfills,
    backfillStepper,
    pods,
    waits,
    alerts,
    heartbeat,
    async prune(pause) {
      const before = clock() - config.retentionDays * 86_400_000;
      const started = Date.now();
      const removed = await pruneExpired({ store, before, pause });
      if (removed > 0) {
        logger.info({ removed, retention_days: config.retentionDays, duration_ms: Date.now() - started }, 'pruned old deliveries');
      }
      return removed;
    },
  };
}
