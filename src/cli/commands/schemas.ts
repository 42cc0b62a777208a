import { createReadStream, existsSync } from 'node:fs';
import { parseConfig } from '../../core/config.js';
import type { Delivery } from '../../core/delivery.js';
import { EVENT_TYPES, type EventType } from '../../core/events/event-types.js';
import {
  checkShapes,
  createShapeInference,
  deliverySample,
  EVERY_VALUE,
  formatDifference,
  generatePayloadModule,
  PAYLOAD_MODULE_PATH,
  readPayloadModule,
  shapesToJsonSchema,
  type PayloadShapes,
  type SkipReason,
} from '../../core/shapes/index.js';
import { DELIVERY_EXPORT_FORMAT } from '../../core/transfer/delivery-export.js';
import { scanDeliveries } from '../../core/transfer/scan-deliveries.js';
import { readExportFile } from '../../node/read-export-file.js';
import { defineCommand, EXIT, UsageError, type CommandIo } from '../command.js';
import { openExistingStore } from '../delivery-filters.js';
import { parseEventType } from '../event-arguments.js';
import { checkOutputPath, readTextFile, writeFileAtomically } from '../module-file.js';
import { createProgressBar } from '../progress-bar.js';
import { parseSince } from './listen.js';

const PAGE = 500;

const SKIPPED: Record<SkipReason, string> = {
  not_json: 'not JSON',
  not_an_object: 'not a JSON object',
  unknown_type: 'of an unknown type',
  quarantined: 'quarantined',
};

export const schemasCommand = defineCommand({
  name: 'schemas',
  summary: 'Learn the payload shapes from stored deliveries: a typed module, a drift check, JSON Schema.',
  usage: 'podhook schemas [--from FILE.jsonl] [--since ISO|DURATION] [--type T] [--out PATH] [--check] [--json]',
  help: `Reads the stored deliveries (or an export file) and infers one shape per event type from all
of them: a field every sample had is required, others optional; several JSON types make a union,
null makes it nullable; strings always a uuid or an RFC 3339 date-time are marked so; integers
apart from numbers; a string field with at most 12 distinct values over at least 20 samples
records them (ids and times excepted). Then, by default, writes a TypeScript module (commit it):
per type a closed type and a zod schema (unknown keys pass), payloadSchemas, and the shapes as
data; types without samples keep a permissive schema. The same samples give the same file.

Options:
  --from FILE     read a ${DELIVERY_EXPORT_FORMAT} file (podhook export), or stdin for -,
                  instead of the database
  --since WHEN    only deliveries received at or after WHEN: ISO 8601 (2026-05-01T12:00:00Z)
                  or a duration back from now (90s, 15m, 2h, 7d)
  --type T        only this event type; writing then replaces its shape in the existing
                  module (when samples of it were read) and keeps the others
  --out PATH      the module to write or check (default ${PAYLOAD_MODULE_PATH})
  --check         write nothing: compare the samples with the module at --out, one line per
                  difference on stdout (a new field, a required field gone, a changed type,
                  a new value of a low-cardinality string, a type the module has no shape for)
  --json          write nothing: print the shapes as JSON Schema (2020-12) on stdout

Bodies that are not JSON objects, unknown event types and quarantined deliveries are skipped
and counted on stderr. A progress bar is drawn on stderr when it is a terminal.

Reads DATABASE_URL's PostgreSQL when set, else DATABASE_PATH (default ./data/podhook.db);
works while the server runs.
Exit codes: 0 written, printed, or no difference; 1 --check found differences, or the command
failed (no database, an unreadable file or module); 2 bad usage or configuration.`,
  options: {
    from: { type: 'string' },
    since: { type: 'string' },
    type: { type: 'string' },
    out: { type: 'string', short: 'o' },
    check: { type: 'boolean' },
    json: { type: 'boolean' },
  },
  async run({ values }, io) {
    if (values.check && values.json) throw new UsageError('--check and --json do not go together: --check compares with the module, --json prints JSON Schema');
    if (values.json && values.out !== undefined) throw new UsageError('--json prints to stdout: --out names the module to write or check');
    const type = values.type === undefined ? undefined : parseEventType(values.type);
    const since = values.since === undefined ? undefined : parseSince(values.since, Date.now());
    const out = values.out ?? PAYLOAD_MODULE_PATH;
    // A device, a FIFO, a folder, a link or an empty path is refused before anything is read.
    const at = values.json ? undefined : checkOutputPath(out);

    // What the module holds now: compared with (--check), or kept for the other types (--type).
    const existing = values.check || (type !== undefined && at === 'file') ? readModule(out) : undefined;

    const inference = createShapeInference();
    const skipped: Record<SkipReason, number> = { not_json: 0, not_an_object: 0, unknown_type: 0, quarantined: 0 };
    let read = 0;
    const take = (delivery: Delivery) => {
      read++;
      const sample = deliverySample(delivery);
      if ('skipped' in sample) skipped[sample.skipped]++;
      else inference.add(sample);
    };
    if (values.from !== undefined) await readExport(values.from, { type, since }, io, take);
    else await readStore({ type, since }, io, take);

    const learned = inference.shapes();
    const types = type === undefined ? EVENT_TYPES : [type];
    io.stderr(summary(read, learned, skipped));

    if (values.json) {
      io.stdout(`${JSON.stringify(shapesToJsonSchema(learned, types), null, 2)}\n`);
      return EXIT.ok;
    }
    if (values.check) {
      const committed = only(existing!, types);
      const differences = checkShapes(committed, inference.shapes(EVERY_VALUE)).map(formatDifference);
      if (differences.length === 0) {
        io.stdout(`OK: the samples fit ${out}\n`);
        return EXIT.ok;
      }
      io.stdout(differences.map((line) => `${line}\n`).join(''));
      io.stderr(`${differences.length} ${differences.length === 1 ? 'difference' : 'differences'} from ${out}: run podhook schemas again to learn them, then review and commit.\n`);
      return EXIT.failure;
    }
    const shapes = existing === undefined ? learned : replaceType(existing, learned);
    const text = generatePayloadModule(shapes);
    const unchanged = at === 'file' && moduleText(out) === text;
    if (!unchanged) writeFileAtomically(out, text);
    const count = EVENT_TYPES.filter((t) => Object.hasOwn(shapes.types, t)).length;
    io.stdout(`${unchanged ? 'Unchanged' : 'Wrote'} ${out}: ${count} of ${EVENT_TYPES.length} event types have a learned shape.\n`);
    return EXIT.ok;
  },
});

interface Filters {
  type: EventType | undefined;
  since: number | undefined;
}

/** Reads the database page by page (keyset), oldest first; the bar follows the received time up to the newest delivery. */
async function readStore({ type, since }: Filters, io: CommandIo, take: (d: Delivery) => void): Promise<void> {
  const { store, close } = await openExistingStore(parseConfig(io.env));
  try {
    const filters = { eventType: type, since };
    let bar: ReturnType<typeof createProgressBar> | undefined;
    let first = 0;
    let read = 0;
    if (io.stderrIsTTY) {
      // The store counts nothing cheaply, but the newest row is one indexed read away.
      const [newest] = await store.scan({ ...filters, order: 'desc', limit: 1 });
      if (newest !== undefined) {
        const [oldest] = await store.scan({ ...filters, limit: 1 });
        first = oldest!.receivedAt;
        bar = createProgressBar({ total: newest.receivedAt - first + 1, write: io.stderr, label: () => `${read} deliveries` });
      }
    }
    for await (const delivery of scanDeliveries(store, filters, PAGE)) {
      read++;
      take(delivery);
      bar?.update(delivery.receivedAt - first + 1);
    }
    bar?.finish();
  } finally {
    await close();
  }
}

/** Reads an export file (or stdin), streaming; the bar counts its lines, counted first. */
async function readExport(path: string, { type, since }: Filters, io: CommandIo, take: (d: Delivery) => void): Promise<void> {
  const total = io.stderrIsTTY && path !== '-' && existsSync(path) ? await countLines(path) : 0;
  const bar = total > 0 ? createProgressBar({ total, write: io.stderr }) : undefined;
  for await (const delivery of readExportFile(path, io.stdin)) {
    bar?.tick();
    if (type !== undefined && delivery.eventType !== type) continue;
    if (since !== undefined && delivery.receivedAt < since) continue;
    take(delivery);
  }
  bar?.update(total);
  bar?.finish();
}

async function countLines(path: string): Promise<number> {
  let lines = 0;
  let last = 0x0a;
  for await (const chunk of createReadStream(path) as AsyncIterable<Buffer>) {
    for (let i = chunk.indexOf(0x0a); i !== -1; i = chunk.indexOf(0x0a, i + 1)) lines++;
    last = chunk.at(-1) ?? last;
  }
  return last === 0x0a ? lines : lines + 1;
}

/** The module's text, capped (MAX_MODULE_BYTES); what cannot be read is one line naming it (exit 1). */
function moduleText(path: string): string {
  try {
    return readTextFile(path);
  } catch (error) {
    if (error instanceof UsageError) throw error;
    throw new Error(`${path}: ${(error as Error).message}`);
  }
}

function readModule(path: string): PayloadShapes {
  if (!existsSync(path)) throw new Error(`no module at ${path}: run podhook schemas first (or give --out PATH)`);
  const text = moduleText(path);
  try {
    return readPayloadModule(text);
  } catch (error) {
    throw new Error(`${path}: ${(error as Error).message}`);
  }
}

/** The shapes of these types only. */
const only = (shapes: PayloadShapes, types: readonly string[]): PayloadShapes => ({
  ...shapes,
  types: Object.fromEntries(Object.entries(shapes.types).filter(([t]) => types.includes(t))),
});

/** The module's shapes with one type's replaced by what was learned now (kept when no sample of it was read). */
function replaceType(existing: PayloadShapes, learned: PayloadShapes): PayloadShapes {
  const types = { ...only(existing, EVENT_TYPES).types, ...learned.types };
  return { ...existing, types: Object.fromEntries(EVENT_TYPES.flatMap((t) => (Object.hasOwn(types, t) ? [[t, types[t]!]] : []))) };
}

function summary(read: number, learned: PayloadShapes, skipped: Record<SkipReason, number>): string {
  const samples = Object.values(learned.types).reduce((sum, t) => sum + t.samples, 0);
  const types = Object.keys(learned.types).length;
  const left = (Object.keys(SKIPPED) as SkipReason[]).filter((r) => skipped[r] > 0).map((r) => `${skipped[r]} ${SKIPPED[r]}`);
  return `Read ${read} ${read === 1 ? 'delivery' : 'deliveries'}: ${samples} ${samples === 1 ? 'sample' : 'samples'} of ${types} event ${types === 1 ? 'type' : 'types'}${left.length > 0 ? `; skipped ${left.join(', ')}` : ''}.\n`;
}
