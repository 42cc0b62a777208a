import { closeSync, constants, fchmodSync, lstatSync, openSync, writeSync } from 'node:fs';
import { DELIVERY_EXPORT_FORMAT, exportLine } from '../../core/transfer/delivery-export.js';
import { scanDeliveries } from '../../core/transfer/scan-deliveries.js';
import { parseConfig } from '../../core/config.js';
import { defineCommand, EXIT } from '../command.js';
import { FILTER_HELP, FILTER_OPTIONS, openExistingStore, parseFilters } from '../delivery-filters.js';

const PAGE = 200;

export const exportCommand = defineCommand({
  name: 'export',
  summary: 'Write stored deliveries as JSON Lines, raw bodies byte-exact (for import, replay, send).',
  usage: 'podhook export [--status S] [--type T] [--since ISO] [--out FILE [--force]]',
  help: `Options:
${FILTER_HELP}
  --out FILE    write to FILE instead of stdout: created owner-only (0600); an existing
                FILE is refused, and a symlink is never followed
  --force       replace an existing FILE (made owner-only); a symlink is still refused

Each line is one delivery, oldest first, in the ${DELIVERY_EXPORT_FORMAT} format (docs/cli.md, section export):
{"format":"${DELIVERY_EXPORT_FORMAT}","event_id","event_type","signature_t","received_at",
 "last_received_at","delivery_count","status","attempts","last_error","next_attempt_at",
 "processed_at","headers","body_base64"} and, for a quarantined delivery, "conflict_with"
The body is base64 of the exact bytes received, so bodies that are not UTF-8 survive.

Reads DATABASE_URL's PostgreSQL when set, else DATABASE_PATH (default ./data/podhook.db);
works while the server runs.
Exit codes: 0 exported, 1 no database at that path or FILE exists, 2 bad usage or configuration.`,
  options: { ...FILTER_OPTIONS, out: { type: 'string', short: 'o' }, force: { type: 'boolean' } },
  async run({ values }, io) {
    const filters = parseFilters(values);
    const out = values.out;
    const config = parseConfig(io.env);
    let fd: number | undefined;
    if (out !== undefined) {
      try {
        fd = openOutput(out, values.force === true);
      } catch (error) {
        io.stderr(`podhook export: ${(error as Error).message}\n`);
        return EXIT.failure;
      }
    }
    let store: Awaited<ReturnType<typeof openExistingStore>>['store'];
    let close: () => Promise<void>;
    try {
      ({ store, close } = await openExistingStore(config));
    } catch (error) {
      if (fd !== undefined) closeSync(fd);
      throw error;
    }
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

/**
 * Bodies are payload data, not secrets, but may still be private: owner-only, like the database.
 * O_NOFOLLOW: a symlink planted at FILE must not redirect the write to its target.
 */
function openOutput(path: string, force: boolean): number {
  const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_NOFOLLOW | (force ? constants.O_TRUNC : constants.O_EXCL);
  let fd: number;
  try {
    fd = openSync(path, flags, 0o600);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const symlink = code === 'ELOOP' || (code === 'EEXIST' && lstatSync(path).isSymbolicLink());
    if (symlink) throw new Error(`${path} is a symlink: it is never followed; give another path`);
    if (code === 'EEXIST') throw new Error(`${path} exists: pass --force to replace it`);
    throw error;
  }
  // An existing file keeps its mode when opened: make it owner-only too.
  fchmodSync(fd, 0o600);
  return fd;
}
