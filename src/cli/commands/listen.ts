import { parseConfig, dispatchTuning } from '../../core/config.js';
import type { DispatchInstrument } from '../../core/dispatch/dispatch-instrument.js';
import { createDispatcher } from '../../core/dispatch/dispatcher.js';
import { createRouter, patternMatches } from '../../core/dispatch/router.js';
import { EVENT_TYPES } from '../../core/events/event-types.js';
import type { EventPattern } from '../../core/events/define-handler.js';
import type { Logger } from '../../core/observability/logger.js';
import { createExportClient, RemoteUnauthorizedError } from '../../core/transfer/export-client.js';
import { followRemote } from '../../core/transfer/follow-remote.js';
import { createImporter } from '../../core/transfer/import-deliveries.js';
import { createNodeSignatureCrypto } from '../../node/node-crypto.js';
import { createNodeLogger } from '../../node/logger.js';
import { startTracing } from '../../node/start-tracing.js';
import { createTracing, SPAN } from '../../core/tracing/index.js';
import { handlerLevelFloor } from '../../core/runner/handler-log.js';
import { storeSteps } from '../../core/waits/index.js';
import { createPodsAccess } from '../../core/pods/pods-access.js';
import { storedAndConfiguredRedactor } from '../secret-redactor.js';
import { dispatchFeatures } from '../../runtime/dispatch-features.js';
import { openConfiguredStore } from '../../store/node-store.js';
import { parseTimeOrDuration, TIME_OR_DURATION_HINT } from '../../core/steps/time-or-duration.js';
import { defineCommand, EXIT, UsageError, type CommandIo } from '../command.js';
import { loadValidRegistry } from '../../node/handler-registry.js';
import { HANDLERS_HELP, HANDLERS_OPTION } from '../handlers-option.js';
import { remoteUrl } from '../remote-url.js';

/** Exit code of a listen the remote refused the token for (401). */
export const EXIT_UNAUTHORIZED = 3;
/** How often a remote that answers at once (the Worker: no long poll) is asked again. */
export const WORKER_POLL_MS = 2_000;

export const listenCommand = defineCommand({
  name: 'listen',
  summary: 'Follow a deployed podhook\'s deliveries: store them here and run the local handlers on them.',
  usage: 'podhook listen --from URL [--token T] [--types T,T] [--since ISO|DURATION] [--handler NAME] [--handlers MODULE] [--once]',
  help: `Reads the remote's GET /_podhook/api/export (its admin API: ADMIN_TOKEN set there), stores
each delivery in this store (DATABASE_URL's PostgreSQL when set, else DATABASE_PATH) byte-exact,
deduplicated on event id as \`podhook import\` does (status queued here, whatever it is there),
and runs the local handlers on it through the dispatcher (retries, ledger and dead letters as
\`podhook serve\` does). One line per delivery on stdout: the time it was stored remotely, its
type, its event id, the local handlers' outcome.

The position in each remote's export is kept in that store: stopped and started again,
listen fetches everything stored there since the last delivery it saw, then follows live: a
Node remote long-polls (within about a second); a Worker remote is asked every ${WORKER_POLL_MS / 1000} s and
holds back its last 5 s (within about 7 s). The remote is only read: nothing is written
there, no status changes.

Options:
  --from URL        the deployed podhook (https://...; http:// only to 127.0.0.1, ::1, localhost)
  --token T         its ADMIN_TOKEN (better: PODHOOK_ADMIN_TOKEN, which stays out of \`ps\`);
                    never printed or logged
  --types T,T       only these event types (patterns as handlers take them: pod.backup.*);
                    the others are skipped for good
  --since WHEN      where to start the first time: ISO 8601 (2026-05-01T12:00:00Z) or a
                    duration back from now (90s, 15m, 2h, 7d); default: now. Ignored once this
                    database has a position for the remote
  --handler NAME    run only this local handler (deliveries it does not take become ignored here)
${HANDLERS_HELP}
  --once            fetch what is there, wait for the local handlers, exit

Network errors and 5xx answers are retried with backoff (1 s doubling to 30 s), one line each
on stderr; --once gives up after 5 attempts in a row. Handler log lines (JSON, LOG_LEVEL) go to
stderr. Reads DATABASE_URL or DATABASE_PATH and the DISPATCH_* / HANDLER_TIMEOUT_MS / RETRY_* variables;
with OTEL_EXPORTER_OTLP_ENDPOINT (or the other OTEL_* variables of \`podhook serve\`), each local
attempt is a span linked to the receipt the remote recorded (docs/tracing.md).

Exit codes: 0 stopped (Ctrl-C) or --once with every handler run succeeding, 1 --once with a
failed handler run or a conflict, or the remote answered something retrying cannot fix,
2 bad usage (no token, http:// to a non-loopback host, a bad --since), ${EXIT_UNAUTHORIZED} the remote refused
the token (401).`,
  options: {
    from: { type: 'string' },
    token: { type: 'string' },
    types: { type: 'string' },
    since: { type: 'string' },
    handler: { type: 'string' },
    ...HANDLERS_OPTION,
    once: { type: 'boolean' },
  },
  async run({ values }, io) {
    const from = remoteUrl(values.from);
    const token = values.token ?? io.env.PODHOOK_ADMIN_TOKEN;
    if (!token) throw new UsageError('give the remote\'s ADMIN_TOKEN: set PODHOOK_ADMIN_TOKEN (or --token)');
    const clock = () => Date.now();
    const since = parseSince(values.since, clock());
    const types = parseTypes(values.types);
    const { handlers: all, payloads } = await loadValidRegistry(values.handlers);
    const only = values.handler;
    if (only !== undefined && !all.some((h) => h.name === only)) {
      throw new UsageError(`no handler is named "${only}" (handlers: ${all.map((h) => h.name).join(', ') || 'none'})`);
    }
    const once = values.once === true;
    const config = parseConfig(io.env);

    const logger = stderrLogger(io, config.logLevel);
    // With OTEL_* set, each local attempt is a span linked to the receipt the remote recorded.
    const sdk = await startTracing(io.env, logger);
    const { store, where, close } = await openConfiguredStore(config);
    const router = createRouter(only === undefined ? all : all.filter((h) => h.name === only));
    const redact = await storedAndConfiguredRedactor(config, store, [token]);
    const client = createExportClient({ baseUrl: from.href, token });
    const remoteTimes = new Map<string, number>();
    const line = (time: number, type: string, id: string, outcome: string) =>
      io.stdout(`${new Date(time).toISOString()}  ${type.padEnd(20)}  ${id}  ${outcome}\n`);
    let failed = 0;
    const owner = `listen-${process.pid}-${crypto.randomUUID().slice(0, 8)}`;
    // Ordered handlers keep their order here too (a delivery waits for the earlier ones of its key).
    const { gate, instruments } = dispatchFeatures({
      handlers: router.handlers,
      payloads,
      store,
      holdMs: config.dispatch.orderHoldMs,
      tracing: createTracing({ redact }),
      span: { name: SPAN.dispatch, owner },
    });
    const report: DispatchInstrument = {
      subscriber: {
        deliveryFinished(type, status, { eventId, attempt, failures }) {
          const time = remoteTimes.get(eventId) ?? clock();
          if (status !== 'failed') remoteTimes.delete(eventId);
          if (status === 'failed' || status === 'dead') failed++;
          line(time, type, eventId, outcomeText(status, attempt, failures, router.handlersFor(type).map((h) => h.name)));
        },
      },
    };
    const dispatcher = createDispatcher({
      store,
      router,
      logger,
      clock,
      owner,
      ...dispatchTuning(config),
      payloadSchemas: payloads.schemas,
      redact,
      steps: storeSteps({ store, redact, payloads, stepKey: config.stepEncryptionKey, clock, refreshMs: config.dispatch.pollMs }).steps,
      levelFloor: handlerLevelFloor(config.logLevel),
      pods: createPodsAccess({ config: config.pods, store, clock }),
      gate,
      instruments: [report, ...instruments],
    });

    const stop = new AbortController();
    const onSignal = () => stop.abort();
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
    // Retries come due on a timer, as in `podhook serve`; deliveries left queued here run now.
    const retryTimer = once ? undefined : setInterval(() => dispatcher.wake(), config.dispatch.pollMs);
    dispatcher.wake();
    io.stderr(`podhook listen: following ${client.remote} into ${where}${once ? ' (--once)' : ' (Ctrl-C stops)'}\n`);
    let conflicts = 0;
    try {
      await followRemote({
        client,
        store,
        importDeliveries: createImporter({ store, crypto: createNodeSignatureCrypto() }),
        since,
        types,
        once,
        signal: stop.signal,
        clock,
        sleep,
        pollMs: WORKER_POLL_MS,
        onStored(stored) {
          for (const { delivery, result } of stored) {
            if (result.outcome === 'new') remoteTimes.set(delivery.eventId, delivery.receivedAt);
            else if (result.outcome === 'duplicate') line(delivery.receivedAt, delivery.eventType, delivery.eventId, 'already stored here: not run again');
            else {
              conflicts++;
              line(delivery.receivedAt, delivery.eventType, delivery.eventId, 'CONFLICT: not stored (its signed content is stored here under another event id, or the id under another type)');
            }
          }
          if (stored.length > 0) dispatcher.wake();
        },
        onRetry(error, delayMs, attempt) {
          io.stderr(`podhook listen: ${error.message}; trying again in ${Math.round(delayMs / 1000)} s (attempt ${attempt + 1})\n`);
        },
        onRecovered() {
          io.stderr(`podhook listen: ${client.remote} answers again\n`);
        },
        onResume() {
          if (values.since !== undefined) io.stderr('podhook listen: resuming after the last delivery seen from this remote (--since applies only the first time)\n');
        },
      });
      if (once) await dispatcher.runUntilIdle();
    } catch (error) {
      if (error instanceof RemoteUnauthorizedError) {
        io.stderr(`podhook listen: stopped: ${error.message}\n`);
        return EXIT_UNAUTHORIZED;
      }
      io.stderr(`podhook listen: stopped: ${(error as Error).message}\n`);
      return EXIT.failure;
    } finally {
      clearInterval(retryTimer);
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      await dispatcher.stop();
      await close();
      await sdk?.shutdown();
    }
    return once && failed + conflicts > 0 ? EXIT.failure : EXIT.ok;
  },
});

/** `--since`: an ISO 8601 time, or a duration back from now; default now. */
export function parseSince(value: string | undefined, now: number): number {
  if (value === undefined) return now;
  const at = parseTimeOrDuration(value, now);
  if (at !== null) return at;
  throw new UsageError(`--since must be ${TIME_OR_DURATION_HINT} (got ${JSON.stringify(value)})`);
}

/** `--types`: event types or patterns, each matching at least one known type. */
function parseTypes(value: string | undefined): EventPattern[] | null {
  if (value === undefined) return null;
  const list = value.split(',').map((t) => t.trim()).filter((t) => t !== '');
  if (list.length === 0) throw new UsageError('--types needs at least one event type');
  for (const t of list) {
    if (!EVENT_TYPES.some((known) => patternMatches(t as EventPattern, known))) {
      throw new UsageError(`--types: ${JSON.stringify(t)} matches no event type (known: ${EVENT_TYPES.join(', ')})`);
    }
  }
  return list as EventPattern[];
}

function outcomeText(status: string, attempt: number, failures: ReadonlyArray<{ handler: string; error: string }>, handlers: string[]): string {
  const why = failures.map((f) => `${f.handler}: ${f.error}`).join('; ');
  switch (status) {
    case 'processed':
      return `processed (${handlers.join(', ')})${attempt > 1 ? ` at attempt ${attempt}` : ''}`;
    case 'failed':
      return `FAILED at attempt ${attempt}, will retry: ${why}`;
    case 'dead':
      return `DEAD after ${attempt} ${attempt === 1 ? 'attempt' : 'attempts'}: ${why || 'its body cannot be parsed'}`;
    case 'ignored':
      return 'ignored: no local handler takes this type';
    case 'queued':
      return 'waiting: an ordered handler waits for an earlier delivery of its key (its other handlers ran)';
    default:
      return status;
  }
}

/** Handler log lines on stderr, so stdout carries only one line per delivery. */
function stderrLogger(io: CommandIo, level: ReturnType<typeof parseConfig>['logLevel']): Logger {
  if (io.env.LOG_PRETTY === '1') return createNodeLogger({ level, pretty: true });
  return createNodeLogger({ level, destination: { write: (text: string) => io.stderr(text) } });
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}
