import type { Delivery } from '../../core/delivery.js';
import { DELIVERY_EXPORT_FORMAT } from '../../core/transfer/delivery-export.js';
import { answerLabel, createDeliveryPoster, type PostAnswer } from '../../core/transfer/post-delivery.js';
import { createNodeSignatureCrypto } from '../../node/node-crypto.js';
import { readExportFile } from '../../node/read-export-file.js';
import { defineCommand, EXIT, UsageError } from '../command.js';
import { createProgressBar } from '../progress-bar.js';
import { parseUrl, SECRET_HELP, signingSecret } from '../sending-options.js';

export const sendCommand = defineCommand({
  name: 'send',
  summary: 'POST captured deliveries to a running receiver, signed again with a fresh t.',
  usage: 'podhook send --to URL [--secret S] [--concurrency N] FILE.jsonl|-',
  help: `Reads a ${DELIVERY_EXPORT_FORMAT} file from \`podhook export\` (or stdin for -) and POSTs each
delivery, in file order, as the service would: the original body bytes, event id and type,
signed now (the captured t is outside the receiver's 300-second window by now).

Options:
  --to URL          the receiver's webhook URL, e.g. http://127.0.0.1:3000/webhooks (required)
${SECRET_HELP}
  --concurrency N   requests in flight at once, 1 to 64 (default 4)

The whole file is read and checked before the first request. A progress bar is drawn on
stderr when it is a terminal; the answers are summed up on stdout by status (a podhook
receiver answers "200 new", then "200 duplicate" for an event id it already has).

Exit codes: 0 every answer was 2xx, 1 some were not (or the file is malformed),
2 bad usage or configuration (no secret).`,
  options: {
    to: { type: 'string' },
    secret: { type: 'string' },
    concurrency: { type: 'string' },
  },
  allowPositionals: true,
  async run({ values, positionals }, io) {
    if (positionals.length !== 1) throw new UsageError('give one export file, or - for stdin');
    if (values.to === undefined) throw new UsageError('--to URL is required (e.g. http://127.0.0.1:3000/webhooks)');
    const url = parseUrl(values.to);
    const concurrencyText = values.concurrency ?? '4';
    if (!/^[1-9]\d*$/.test(concurrencyText) || Number(concurrencyText) > 64) throw new UsageError('--concurrency must be a whole number from 1 to 64');
    const secret = await signingSecret(values.secret, io.env);

    const deliveries: Delivery[] = [];
    for await (const d of readExportFile(positionals[0]!, io.stdin)) deliveries.push(d);

    const post = createDeliveryPoster({ url, secret, crypto: createNodeSignatureCrypto() });
    const bar = io.stderrIsTTY && deliveries.length > 0 ? createProgressBar({ total: deliveries.length, write: io.stderr }) : undefined;
    const answers: PostAnswer[] = new Array(deliveries.length);
    let next = 0;
    const worker = async () => {
      while (next < deliveries.length) {
        const i = next++;
        const d = deliveries[i]!;
        answers[i] = await post({ eventId: d.eventId, eventType: d.eventType, body: d.body, contentType: d.headers['content-type'] });
        bar?.tick();
      }
    };
    await Promise.all(Array.from({ length: Math.min(Number(concurrencyText), deliveries.length) }, worker));
    bar?.finish();

    const counts = new Map<string, number>();
    for (const a of answers) counts.set(answerLabel(a), (counts.get(answerLabel(a)) ?? 0) + 1);
    const width = Math.max(0, ...[...counts.keys()].map((k) => k.length));
    io.stdout(
      `Sent ${deliveries.length} ${deliveries.length === 1 ? 'delivery' : 'deliveries'} to ${url}:\n` +
        [...counts].map(([label, n]) => `  ${label.padEnd(width)}  ${n}\n`).join(''),
    );
    const failed = answers.filter((a) => a.status === null || a.status < 200 || a.status > 299);
    for (const a of failed.slice(0, 20)) io.stderr(`${a.eventId}: ${answerLabel(a)}\n`);
    if (failed.length > 20) io.stderr(`… and ${failed.length - 20} more not answered with 2xx\n`);
    return failed.length > 0 ? EXIT.failure : EXIT.ok;
  },
});
