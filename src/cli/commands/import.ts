import type { Delivery } from '../../core/delivery-store.js';
import { DELIVERY_EXPORT_FORMAT, ExportFormatError } from '../../core/transfer/delivery-export.js';
import { createImporter } from '../../core/transfer/import-deliveries.js';
import { parseConfig } from '../../core/config.js';
import { createNodeSignatureCrypto } from '../../node/node-crypto.js';
import { readExportFile } from '../../node/read-export-file.js';
import { openConfiguredStore } from '../../store/node-store.js';
import { defineCommand, EXIT, UsageError } from '../command.js';

/** Rows per transaction. */
const BATCH = 100;

export const importCommand = defineCommand({
  name: 'import',
  summary: 'Store the deliveries of an export file in this database, deduplicated on event id.',
  usage: 'podhook import FILE.jsonl|-',
  help: `Reads a ${DELIVERY_EXPORT_FORMAT} file written by \`podhook export\` (or stdin for -) into
DATABASE_URL's PostgreSQL when set, else DATABASE_PATH (default ./data/podhook.db; created and
migrated if missing).

Each delivery is stored as it was exported: the same bytes, headers, signature t, status,
attempts, delivery count, last error and times, so \`podhook replay --status dead\` finds the
other machine's dead letters here. The per-handler ledger is not exported: handlers here
start with a clean ledger. Queued and failed rows stay due, so a \`podhook serve\` on this
database dispatches them.

An event id already stored here is skipped and left untouched (importing a file twice changes
nothing). A record whose signed content (t + body) is stored under another event id, or whose
id is stored with another type, is refused as a conflict (the receiver quarantines such a
delivery; an import leaves it out).

Rows are written in transactions of ${BATCH}. A malformed line stops the import there, naming
the line; the rows before it are stored (run it again once fixed: they are skipped).

Exit codes: 0 every record is stored, 1 a conflict or a malformed line, 2 bad usage.`,
  options: {},
  allowPositionals: true,
  async run({ positionals }, io) {
    if (positionals.length !== 1) throw new UsageError('give one export file, or - for stdin');
    const file = positionals[0]!;
    const config = parseConfig(io.env);
    const { store, where, close } = await openConfiguredStore(config);
    const importDeliveries = createImporter({ store, crypto: createNodeSignatureCrypto() });
    const tally = { new: 0, duplicate: 0, conflict: 0 };
    const conflicts: string[] = [];
    let batch: Delivery[] = [];
    const flush = async () => {
      const results = await importDeliveries(batch);
      results.forEach((r, i) => {
        tally[r.outcome]++;
        if (r.outcome === 'conflict') conflicts.push(batch[i]!.eventId);
      });
      batch = [];
    };
    const report = () =>
      `${tally.new} new, ${tally.duplicate} already stored (skipped), ${tally.conflict} ${tally.conflict === 1 ? 'conflict' : 'conflicts'}`;
    try {
      for await (const delivery of readExportFile(file, io.stdin)) {
        batch.push(delivery);
        if (batch.length === BATCH) await flush();
      }
      await flush();
    } catch (error) {
      // The rows read before a malformed line are stored, as the help says.
      if (error instanceof ExportFormatError) await flush().catch(() => undefined);
      io.stderr(`podhook import: stopped: ${(error as Error).message}\nStored before that: ${report()}.\n`);
      return EXIT.failure;
    } finally {
      await close();
    }
    const total = tally.new + tally.duplicate + tally.conflict;
    io.stdout(`Imported ${total} ${total === 1 ? 'record' : 'records'} into ${where}: ${report()}.\n`);
    for (const id of conflicts) {
      io.stderr(`conflict: ${id}: its signed content is stored under another event id, or the id under another type\n`);
    }
    return conflicts.length > 0 ? EXIT.failure : EXIT.ok;
  },
});
