import { createReadStream, existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import type { Delivery } from '../core/delivery.js';
import { ExportFormatError, parseExportLine } from '../core/transfer/delivery-export.js';

/**
 * The deliveries of an export file (`podhook.delivery.v1` JSON Lines), or of `stdin` when the
 * path is `-`, in file order; blank lines are skipped. Streams, so a large export is never held
 * in memory at once. A bad line throws an `ExportFormatError` naming its line number.
 */
export async function* readExportFile(path: string, stdin: NodeJS.ReadableStream): AsyncGenerator<Delivery> {
  if (path !== '-' && !existsSync(path)) throw new Error(`no such file: ${path}`);
  const input = path === '-' ? stdin : createReadStream(path, { encoding: 'utf8' });
  let number = 0;
  for await (const line of createInterface({ input, crlfDelay: Infinity })) {
    number++;
    if (line.trim() === '') continue;
    let delivery: Delivery;
    try {
      delivery = parseExportLine(line);
    } catch (error) {
      throw new ExportFormatError(`${path === '-' ? 'stdin' : path}, line ${number}: ${(error as Error).message}`);
    }
    yield delivery;
  }
}
