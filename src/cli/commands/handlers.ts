import { historyGaps, type HistoryGap } from '../../core/backfill/history-gaps.js';
import type { StoredSecret } from '../../core/delivery-store.js';
import { coverageMismatch, handlerCoverage, subscribedTypes } from '../../core/events/handler-coverage.js';
import { describeStore, parseConfig } from '../../core/config.js';
import { loadValidRegistry } from '../../node/handler-registry.js';
import { openConfiguredStore } from '../../store/node-store.js';
import { defineCommand, EXIT } from '../command.js';
import { formatTable } from '../format-table.js';
import { HANDLERS_HELP, HANDLERS_OPTION } from '../handlers-option.js';
import { storeExists } from '../store-exists.js';

export const handlersCommand = defineCommand({
  name: 'handlers',
  summary: 'Show what handles what: the handler registry, each event type, and the webhook subscription.',
  usage: 'podhook handlers [--json] [--handlers MODULE]',
  help: `Lists each handler (name, pattern, the types it takes), then each of the 11 event types
with its handlers and, where \`podhook register\` stored a webhook in DATABASE_PATH, whether that
webhook is subscribed to it. Two mismatches are flagged with "!":
  subscribed but unhandled   the delivery is stored as ignored
  handled but not subscribed the service never sends it (register again with --events or
                             --only-handled)
The shape column says how many payloads the type's learned shape came from (the registry's
payloadShapes, from \`podhook schemas\`; "-": none learned, any JSON object).

A handler that never ran on some stored deliveries of its types (added after they arrived, or not
yet run by a receiver) is named with how many, and the podhook backfill command that runs it on them.

Options:
  --json             {"handlers":[{"name","pattern","types":[...]}],
                      "types":[{"type","handlers":[...],"subscribed":true|false|null,
                                "samples":N|null}],
                      "history":[{"handler","first_seen_at","not_run","backfill"}]}
                     (subscribed is null when no webhook was stored by podhook register;
                     samples null when no shape is learned for the type)
${HANDLERS_HELP}

Reads DATABASE_URL's PostgreSQL when set, else DATABASE_PATH (default ./data/podhook.db) if it
exists; never creates it.
Exit codes: 0 listed, 2 bad usage, configuration, or an invalid handler registry (the message
names the module and what is wrong).`,
  options: { json: { type: 'boolean' }, ...HANDLERS_OPTION },
  async run({ values }, io) {
    const config = parseConfig(io.env);
    const { registry, handlers, payloads } = await loadValidRegistry(values.handlers);

    let secrets: StoredSecret[] = [];
    let gaps: HistoryGap[] = [];
    if (storeExists(config)) {
      const { store, close } = await openConfiguredStore(config);
      try {
        secrets = await store.listSecrets();
        gaps = await historyGaps(store, handlers, Date.now());
      } finally {
        await close();
      }
    }
    const coverage = handlerCoverage(handlers, subscribedTypes(secrets), payloads.shapes);
    if (values.json) {
      const history = gaps.map((g) => ({
        handler: g.handler,
        first_seen_at: g.firstSeenAt === null ? null : new Date(g.firstSeenAt).toISOString(),
        not_run: g.notRun,
        backfill: `podhook backfill ${g.handler}`,
      }));
      io.stdout(`${JSON.stringify({ ...coverage, history }, null, 2)}\n`);
      return EXIT.ok;
    }

    const webhooks = secrets.filter((s) => s.webhookId !== null);
    const out: string[] = [];
    out.push(`Handlers in ${registry}: ${handlers.length}`);
    if (handlers.length > 0) {
      out.push(formatTable(['name', 'pattern', 'types'], coverage.handlers.map((h) => ({ ...h, types: h.types.length === 11 ? 'all 11' : h.types.join(', ') })), 200));
    } else {
      out.push('  (none: every delivery is stored as ignored)\n');
    }
    out.push(
      webhooks.length === 0
        ? `Event types (no webhook stored by podhook register in ${describeStore(config).database}: subscription unknown):`
        : `Event types (webhook${webhooks.length > 1 ? 's' : ''} ${webhooks.map((w) => `${w.webhookId} → ${w.url}`).join(', ')}):`,
    );
    const rows = coverage.types.map((t) => {
      const mismatch = coverageMismatch(t);
      return {
        type: t.type,
        handlers: t.handlers.join(', ') || '(none)',
        subscribed: t.subscribed === null ? '?' : t.subscribed ? 'yes' : 'no',
        shape: t.samples === null ? '-' : `${t.samples} samples`,
        note: mismatch ? `! ${mismatch}` : '',
      };
    });
    out.push(formatTable(['type', 'handlers', 'subscribed', 'shape', 'note'], rows, 200));
    const flagged = rows.filter((r) => r.note !== '').length;
    if (flagged > 0) out.push(`${flagged} mismatch${flagged > 1 ? 'es' : ''} flagged with "!".\n`);
    for (const g of gaps) {
      const since = g.firstSeenAt === null ? 'it has not run on a receiver yet' : `first seen running ${new Date(g.firstSeenAt).toISOString()}`;
      out.push(`! ${g.handler} never ran on ${g.notRun} stored ${g.notRun === 1 ? 'delivery' : 'deliveries'} of its types (${since}): podhook backfill ${g.handler} --dry-run, then podhook backfill ${g.handler}\n`);
    }
    io.stdout(out.join('\n'));
    return EXIT.ok;
  },
});
