import type { Backfill } from '../../core/backfill/backfill-store.js';
import { backfillJson, backfillProgress } from '../../core/backfill/progress.js';
import { backfillPlanJson, MAX_RATE, planBackfill, startBackfill, type BackfillPlan, type BackfillRequest } from '../../core/backfill/start-backfill.js';
import { parseConfig } from '../../core/config.js';
import { InvalidRequestError } from '../../core/errors.js';
import { isoTime, parseTimeOrDuration, TIME_OR_DURATION_HINT } from '../../core/steps/time-or-duration.js';
import { loadValidHandlers } from '../../node/handler-registry.js';
import { defineCommand, EXIT, UsageError, type CommandIo } from '../command.js';
import { openExistingStore } from '../delivery-filters.js';
import { parseEventType } from '../event-arguments.js';
import { formatTable } from '../format-table.js';
import { HANDLERS_HELP, HANDLERS_OPTION } from '../handlers-option.js';
import { createProgressBar } from '../progress-bar.js';

export const backfillCommand = defineCommand({
  name: 'backfill',
  summary: 'Run a handler added late over the stored deliveries of its types, in the receiver, paced and resumable.',
  usage: 'podhook backfill NAME [--since WHEN] [--until WHEN] [--type T] [--rate N/s] [--dry-run] | --status [--json] | --cancel ID',
  help: `Asks the running receiver (through the database: any replica with the dispatcher on and the
handler in its registry does the work) to run handler NAME on the stored deliveries of the types
it takes, oldest first, as the dispatcher runs live ones: ordered per key for an ordered handler,
with retries, run history and dead letters. Only NAME runs; deliveries NAME already handled (its
ledger says succeeded or skipped, or it ran when they were first dispatched) are skipped. Covered:
processed and ignored deliveries; queued and failed ones already run NAME on their next attempt;
dead letters are left to their redelivery (which runs NAME with their other handlers).

Options:
  --since WHEN       only deliveries received at or after WHEN: ISO 8601 (2026-05-01T12:00:00Z)
                     or a duration back from now (90s, 15m, 2h, 7d); default: the oldest
  --until WHEN       only deliveries received before WHEN (same forms); default: when NAME was
                     first seen running on a dispatching receiver (later ones ran it live)
  --type T           only this one of NAME's event types
  --rate N/s         at most N deliveries a second (e.g. 20/s); default: only the dispatch
                     capacity live deliveries leave free (never more than half the slots)
  --dry-run          print how many deliveries match and how many NAME already handled; write nothing
  --status           every backfill, newest first: progress, rate over the last minute, estimated
                     end (a progress bar per running one on stderr when it is a terminal)
  --cancel ID        stop a running backfill (what was already handed over still runs: one page)
  --json             print JSON: the backfill started, the dry run's counts, or --status's list
${HANDLERS_HELP}

One backfill per handler runs at a time. It survives restarts and a replica's death: another
replica (or the restart) takes it over after LEASE_MS and goes on from where it was; no delivery
is handed to NAME twice by the backfill. On the Worker it advances one page (25) per cron run.

Reads DATABASE_URL's PostgreSQL when set, else DATABASE_PATH (default ./data/podhook.db).
Exit codes: 0 started, cancelled or listed; 1 a backfill of NAME is already running, no running
backfill has that id, or the store failed; 2 bad usage (an unknown handler, a type NAME does not
take, a bad time or rate).`,
  options: {
    since: { type: 'string' },
    until: { type: 'string' },
    type: { type: 'string' },
    rate: { type: 'string' },
    'dry-run': { type: 'boolean' },
    status: { type: 'boolean' },
    cancel: { type: 'string' },
    json: { type: 'boolean' },
    ...HANDLERS_OPTION,
  },
  allowPositionals: true,
  async run({ values, positionals }, io) {
    const modes = [positionals.length > 0, values.status === true, values.cancel !== undefined].filter(Boolean).length;
    if (modes !== 1 || positionals.length > 1) throw new UsageError('give one handler NAME to start a backfill, or --status, or --cancel ID');
    const config = parseConfig(io.env);
    if (values.status || values.cancel !== undefined) {
      if (values.since ?? values.until ?? values.type ?? values.rate ?? values['dry-run']) throw new UsageError('--since, --until, --type, --rate and --dry-run go with a handler NAME');
    }
    const now = Date.now();
    const request = values.status || values.cancel !== undefined ? undefined : parseRequest(positionals[0]!, values, now);
    const handlers = request ? await loadValidHandlers(values.handlers) : [];
    const { store, close } = await openExistingStore(config);
    try {
      if (values.status) return status(await store.listBackfills({ limit: 50 }), values.json === true, io);
      if (values.cancel !== undefined) {
        const cancelled = await store.cancelBackfill(values.cancel, Date.now());
        if (!cancelled) {
          io.stderr(`podhook backfill: no running backfill has the id ${JSON.stringify(values.cancel)} (see podhook backfill --status)\n`);
          return EXIT.failure;
        }
        if (values.json) io.stdout(`${JSON.stringify(backfillJson(cancelled, Date.now()), null, 2)}\n`);
        else io.stdout(`Cancelled backfill ${cancelled.id} of ${cancelled.handler} after ${cancelled.requeued + cancelled.skipped} of ${cancelled.total} deliveries (deliveries already handed to the dispatcher still run).\n`);
        return EXIT.ok;
      }
      try {
        if (values['dry-run']) {
          const plan = await planBackfill(store, handlers, request!, now);
          if (values.json) io.stdout(`${JSON.stringify(backfillPlanJson(plan), null, 2)}\n`);
          else io.stdout(`Dry run: nothing is written.\n${describePlan(plan)}`);
          return EXIT.ok;
        }
        const { backfill, plan } = await startBackfill(store, handlers, request!, now);
        if (values.json) io.stdout(`${JSON.stringify(backfillJson(backfill, Date.now()), null, 2)}\n`);
        else {
          io.stdout(`Started backfill ${backfill.id} of ${backfill.handler}.\n${describePlan(plan)}`);
          io.stdout(`A receiver with the dispatcher on and ${backfill.handler} in its handlers runs it, paced${backfill.rate ? ` at most ${backfill.rate}/s` : ' so live deliveries go first'}.\nFollow it: podhook backfill --status · stop it: podhook backfill --cancel ${backfill.id}\n`);
        }
        return EXIT.ok;
      } catch (error) {
        if (!(error instanceof InvalidRequestError)) throw error;
        if (error.reason === 'backfill_running') {
          io.stderr(`podhook backfill: ${error.message}: podhook backfill --status, podhook backfill --cancel ${String(error.details?.backfill_id ?? 'ID')}\n`);
          return EXIT.failure;
        }
        throw new UsageError(error.message);
      }
    } finally {
      await close();
    }
  },
});

/** The handler and options as a request; the times parsed, the rate read. */
function parseRequest(handler: string, values: { since?: string; until?: string; type?: string; rate?: string }, now: number): BackfillRequest {
  const when = (flag: string, text: string | undefined) => {
    if (text === undefined) return undefined;
    const at = parseTimeOrDuration(text, now);
    if (at === null) throw new UsageError(`--${flag} must be ${TIME_OR_DURATION_HINT} (got ${JSON.stringify(text)})`);
    return at;
  };
  let rate: number | undefined;
  if (values.rate !== undefined) {
    const m = /^(\d+)(\/s)?$/.exec(values.rate);
    rate = m ? Number(m[1]) : NaN;
    if (!(rate >= 1 && rate <= MAX_RATE)) throw new UsageError(`--rate must be N/s with N from 1 to ${MAX_RATE}, e.g. 20/s (got ${JSON.stringify(values.rate)})`);
  }
  return {
    handler,
    since: when('since', values.since),
    until: when('until', values.until),
    type: values.type === undefined ? undefined : parseEventType(values.type),
    rate,
  };
}

/** A stored time as text; one no clock can show (a bad row of an older version) as `?`. */
const iso = (ms: number) => isoTime(ms) ?? '?';

function describePlan({ selection: s, counts, until, firstSeenAt }: BackfillPlan): string {
  const end =
    until === null
      ? `until ${s.handler} first runs on a receiver (it has not yet: now, ${iso(s.until)}, for this count)`
      : until === firstSeenAt
        ? `before ${iso(until)} (when ${s.handler} was first seen running)`
        : `before ${iso(until)}`;
  const lines = [
    `${s.handler} takes ${s.types.join(', ')}: deliveries received ${s.since === null ? '' : `from ${iso(s.since)} `}${end}.`,
    `  ${counts.matching} match, ${counts.handled} already handled: ${s.handler} runs on ${counts.matching - counts.handled}.`,
  ];
  if (counts.deadLetters > 0) {
    lines.push(`  ${counts.deadLetters} dead ${counts.deadLetters === 1 ? 'letter' : 'letters'} in that range ${counts.deadLetters === 1 ? 'is' : 'are'} left to redelivery, which runs ${s.handler} with the other handlers.`);
  }
  return `${lines.join('\n')}\n`;
}

function status(backfills: readonly Backfill[], json: boolean, io: CommandIo): number {
  const now = Date.now();
  if (json) {
    io.stdout(`${JSON.stringify(backfills.map((b) => backfillJson(b, now)), null, 2)}\n`);
    return EXIT.ok;
  }
  if (backfills.length === 0) {
    io.stdout('No backfill has been started.\n');
    return EXIT.ok;
  }
  const rows = backfills.map((b) => {
    const p = backfillProgress(b, now);
    return {
      id: b.id,
      handler: b.handler,
      state: b.state === 'running' && !(b.lease && b.lease.until >= now) ? 'running (no receiver holds it now)' : b.state,
      done: `${p.done}/${b.total}`,
      rate: p.ratePerSecond === null ? '' : `${p.ratePerSecond.toFixed(1)}/s`,
      'estimated end': p.estimatedEnd === null ? '' : iso(p.estimatedEnd),
      started: iso(b.createdAt),
    };
  });
  io.stdout(formatTable(['id', 'handler', 'state', 'done', 'rate', 'estimated end', 'started'], rows, 80));
  if (io.stderrIsTTY) {
    for (const b of backfills.filter((x) => x.state === 'running')) {
      const p = backfillProgress(b, now);
      const bar = createProgressBar({
        total: b.total,
        write: io.stderr,
        label: (done, total) => `${b.handler}  ${done}/${total}${p.ratePerSecond === null ? '' : `  ${p.ratePerSecond.toFixed(1)}/s`}${p.estimatedEnd === null ? '' : `  ends ~${iso(p.estimatedEnd)}`}`,
      });
      bar.update(Math.min(p.done, b.total));
      bar.finish();
    }
  }
  return EXIT.ok;
}
