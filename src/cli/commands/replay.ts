import type { Delivery } from '../../core/delivery.js';
import type { Logger } from '../../core/observability/logger.js';
import { createReplayer, type ReplayOutcome, type ReplayResult } from '../../core/transfer/replay-delivery.js';
import { createRouter } from '../../core/dispatch/router.js';
import { scanDeliveries } from '../../core/transfer/scan-deliveries.js';
import { parseConfig } from '../../core/config.js';
import { loadValidRegistry } from '../../node/handler-registry.js';
import { createNodeLogger } from '../../node/logger.js';
import { startTracing } from '../../node/start-tracing.js';
import { createTracing, SPAN } from '../../core/tracing/index.js';
import { handlerLevelFloor } from '../../core/runner/handler-log.js';
import { storeSteps } from '../../core/waits/index.js';
import { createPodsAccess } from '../../core/pods/pods-access.js';
import { storedAndConfiguredRedactor } from '../secret-redactor.js';
import { dispatchFeatures } from '../../runtime/dispatch-features.js';
import { defineCommand, EXIT, UsageError, type CommandIo } from '../command.js';
import { HANDLERS_HELP, HANDLERS_OPTION } from '../handlers-option.js';
import { escapeControl } from '../format-table.js';
import { FILTER_HELP, FILTER_OPTIONS, hasFilters, openExistingStore, parseFilters } from '../delivery-filters.js';
import { parseEventId } from '../event-arguments.js';

export const replayCommand = defineCommand({
  name: 'replay',
  summary: 'Run the handler modules again on stored deliveries, in this process, offline.',
  usage: 'podhook replay <event-id...> | --status S | --type T [--since ISO] [--handler NAME] [--fresh] [--dry-run]',
  help: `Selects deliveries by event id, or by filters (combined; oldest first):
${FILTER_HELP}

Options:
  --handler NAME     run only this handler (its name in the ledger, e.g. podCreated)
  --fresh            drop the durable steps the handlers recorded (ctx.step, ctx.sleep) and run
                     them from the start: after a deploy changed a handler's steps under a
                     parked or dead run ("step mismatch"). Without it a run resumes after the
                     steps done, their results given back
${HANDLERS_HELP}
  --dry-run          print what would run; run nothing, write nothing

Each selected delivery runs through its handlers exactly as the dispatcher runs them (the
handler's schema, else the registry's generated one, the way back for deliveries an older one
refused; time limit, log line), including handlers that already succeeded; no network is involved and
no retry is scheduled. The outcome is recorded like one more dispatch attempt: each run in the
per-handler ledger; the delivery becomes processed when every run succeeded (unless another
handler of its type still has a failure on record: then it keeps its status), dead with the
error when one failed. A delivery a running server is dispatching at that moment is left alone
("busy"). Deliveries whose type no handler takes are skipped. An ordered handler runs only in its
key's turn; when another delivery of its key runs or comes first, the delivery is handed to the
dispatcher ("waiting"), which runs it in order.

One line per delivery and a summary go to stdout; the handlers' log lines (JSON, LOG_LEVEL;
LOG_PRETTY=1 for people) go to stderr.

Reads DATABASE_URL's PostgreSQL when set, else DATABASE_PATH (default ./data/podhook.db),
HANDLER_TIMEOUT_MS, and STEP_ENCRYPTION_KEY (sensitive steps' results). With OTEL_EXPORTER_OTLP_ENDPOINT (or the other OTEL_* variables of
\`podhook serve\`), each replay is a span linked to the delivery's receipt (docs/tracing.md).
Exit codes: 0 nothing failed, 1 a handler failed or a delivery was busy, missing or unreadable,
2 bad usage or configuration.`,
  options: {
    ...FILTER_OPTIONS,
    handler: { type: 'string' },
    ...HANDLERS_OPTION,
    fresh: { type: 'boolean' },
    'dry-run': { type: 'boolean' },
  },
  allowPositionals: true,
  async run({ values, positionals }, io) {
    const filters = parseFilters(values);
    if (positionals.length > 0 && hasFilters(filters)) throw new UsageError('give event ids or filters, not both');
    if (positionals.length === 0 && !hasFilters(filters)) {
      throw new UsageError('name the deliveries to replay: event ids, or --status, --type or --since');
    }
    const ids = positionals.map((id) => parseEventId(id));
    const { handlers, payloads } = await loadValidRegistry(values.handlers);
    const only = values.handler;
    if (only !== undefined && !handlers.some((h) => h.name === only)) {
      throw new UsageError(`no handler is named "${only}" (handlers: ${handlers.map((h) => h.name).join(', ') || 'none'})`);
    }
    const dryRun = values['dry-run'] === true;
    const config = parseConfig(io.env);
    const logger = stderrLogger(io, config.logLevel);
    // With OTEL_* set, each replay is a span linked to its delivery's receipt, its handler runs inside.
    const sdk = dryRun ? null : await startTracing(io.env, logger);
    const { store, close } = await openExistingStore(config);
    const redact = await storedAndConfiguredRedactor(config, store);
    const owner = `replay-${crypto.randomUUID()}`;
    const { gate, instruments } = dispatchFeatures({
      handlers,
      payloads,
      store,
      holdMs: config.dispatch.orderHoldMs,
      replay: true,
      tracing: createTracing({ redact }),
      span: { name: SPAN.replay, owner },
    });
    const replayer = createReplayer({
      store,
      router: createRouter(handlers),
      logger,
      handlerTimeoutMs: config.dispatch.handlerTimeoutMs,
      handler: only,
      owner,
      gate,
      instruments,
      payloadSchemas: payloads.schemas,
      redact,
      steps: storeSteps({ store, redact, payloads, stepKey: config.stepEncryptionKey, clock: Date.now, refreshMs: config.dispatch.pollMs }).steps,
      levelFloor: handlerLevelFloor(config.logLevel),
      pods: createPodsAccess({ config: config.pods, store, clock: Date.now }),
      fresh: values.fresh === true,
    });

    const tally: Record<ReplayOutcome | 'missing', number> = { succeeded: 0, failed: 0, skipped: 0, busy: 0, waiting: 0, lost: 0, missing: 0 };
    let runs = 0;
    try {
      if (dryRun) io.stdout('Dry run: nothing is run or written.\n');
      for await (const delivery of select(ids, (id) => store.get(id), () => scanDeliveries(store, filters))) {
        if (typeof delivery === 'string') {
          tally.missing++;
          io.stdout(`${delivery}  not found\n`);
          continue;
        }
        if (dryRun) {
          const names = replayer.handlersFor(delivery).map((h) => h.name);
          tally[names.length > 0 ? 'succeeded' : 'skipped']++;
          runs += names.length;
          const run = values.fresh ? 'would run from the start' : 'would run';
          io.stdout(`${head(delivery)}  ${names.length > 0 ? `${run} ${names.join(', ')}` : 'skipped: no handler takes it'}\n`);
          continue;
        }
        const result = await replayer.replay(delivery);
        tally[result.outcome]++;
        runs += result.runs.length;
        io.stdout(`${head(delivery)}  ${escapeControl(describe(delivery, result))}\n`);
      }
    } finally {
      await close();
      await sdk?.shutdown();
    }
    io.stdout(`${summary(tally, runs, dryRun)}\n`);
    return tally.failed + tally.busy + tally.lost + tally.missing > 0 ? EXIT.failure : EXIT.ok;
  },
});

/** The deliveries named by id (a missing one yields its id), or those the filters match. */
async function* select(
  ids: readonly string[],
  get: (id: string) => Promise<Delivery | null>,
  scan: () => AsyncGenerator<Delivery>,
): AsyncGenerator<Delivery | string> {
  if (ids.length === 0) return yield* scan();
  for (const id of ids) yield (await get(id)) ?? id;
}

/** Handler log lines on stderr, so stdout carries only the report. */
function stderrLogger(io: CommandIo, level: ReturnType<typeof parseConfig>['logLevel']): Logger {
  if (io.env.LOG_PRETTY === '1') return createNodeLogger({ level, pretty: true });
  return createNodeLogger({ level, destination: { write: (line: string) => io.stderr(line) } });
}

const head = (d: Delivery) => `${d.eventId}  ${escapeControl(d.eventType).padEnd(20)}  ${d.status.padEnd(9)}`;

function describe(d: Delivery, r: ReplayResult): string {
  const ran = r.runs.map((run) => run.handler).join(', ');
  switch (r.outcome) {
    case 'succeeded':
      return `succeeded (${ran}) → ${r.status}`;
    case 'failed':
      return r.runs.length > 0 ? `FAILED → ${r.status}: ${r.reason}` : `FAILED, not run: ${r.reason}`;
    case 'skipped':
      return `skipped: ${r.reason}`;
    case 'busy':
      return `busy: ${r.reason} (status ${d.status})`;
    case 'waiting':
      return `waiting: ${r.reason}${ran ? ` (ran ${ran})` : ''}`;
    case 'lost':
      return `LOST: ${r.reason}${ran ? ` (ran ${ran})` : ''}`;
  }
}

function summary(t: Record<ReplayOutcome | 'missing', number>, runs: number, dryRun: boolean): string {
  const total = t.succeeded + t.failed + t.skipped + t.busy + t.waiting + t.lost + t.missing;
  if (total === 0) return 'No deliveries match.';
  const runsText = `${runs} handler ${runs === 1 ? 'run' : 'runs'}`;
  const parts = dryRun
    ? [`${t.succeeded} would be replayed (${runsText})`, `${t.skipped} skipped`]
    : [`${t.succeeded} succeeded`, `${t.failed} failed`, `${t.skipped} skipped`, `${t.busy} busy`];
  if (t.waiting > 0) parts.push(`${t.waiting} waiting on their order (handed to the dispatcher)`);
  if (t.lost > 0) parts.push(`${t.lost} lost to another podhook (not recorded)`);
  if (t.missing > 0) parts.push(`${t.missing} not found`);
  return `${dryRun ? 'Dry run' : 'Replay'}: ${total} ${total === 1 ? 'delivery' : 'deliveries'}: ${parts.join(', ')}${dryRun ? '' : ` (${runsText})`}.`;
}
