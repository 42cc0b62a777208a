import { closeSync, openSync, writeSync } from 'node:fs';
import { DELIVERY_EXPORT_FORMAT, exportLine } from '../../core/transfer/delivery-export.js';
import { scanDeliveries } from '../../core/transfer/scan-deliveries.js';
import { parseConfig } from '../../core/config.js';
import { defineCommand, EXIT } from '../command.js';
import { FILTER_HELP, FILTER_OPTIONS, openExistingStore, parseFilters } from '../delivery-filters.js';

const PAGE = 200;

export const exportCommand = defineCommand({
  name: 'export',
  summary: 'Write stored deliveries as JSON Lines, raw bodies byte-exact (for import, replay, send).',
  usage: 'podhook export [--status S] [--type T] [--since ISO] [--out FILE]',
  help: `Options:
${FILTER_HELP}
  --out FILE    write to FILE (created owner-only; replaced if it exists) instead of stdout

Each line is one delivery, oldest first, in the ${DELIVERY_EXPORT_FORMAT} format (see the README):
{"format":"${DELIVERY_EXPORT_FORMAT}","event_id","event_type","signature_t","received_at",
 "last_received_at","delivery_count","status","attempts","last_error","next_attempt_at",
 "processed_at","headers","body_base64"}
The body is base64 of the exact bytes received, so bodies that are not UTF-8 survive.

Reads DATABASE_PATH (default ./data/podhook.db); works while the server runs.
Exit codes: 0 exported, 1 no database at that path, 2 bad usage or configuration.`,
  options: { ...FILTER_OPTIONS, out: { type: 'string', short: 'o' } },
  async run({ values }, io) {
    const filters = parseFilters(values);
    const out = values.out;
    const config = parseConfig(io.env);
    const { store, close } = await openExistingStore(config);
    // Bodies are payload data, not secrets, but may still be private: owner-only, like the database.
    const fd = out === undefined ? undefined : openSync(out, 'w', 0o600);
    const write = fd === undefined ? io.stdout : (text: string) => void writeSync(fd, text);
    try {
      let count = 0;
      let page = '';
      for await (const delivery of scanDeliveries(store, filters, PAGE)) {
        page += exportLine(delivery);
        if (++count % PAGE === 0) {
          write(page);
          page = '';
        }
      }
      write(page);
      io.stderr(`Exported ${count} ${count === 1 ? 'delivery' : 'deliveries'}${out === undefined ? '' : ` to ${out}`}.\n`);
      return EXIT.ok;
    } finally {
      if (fd !== undefined) closeSync(fd);
      await close();
    }
  },
});
