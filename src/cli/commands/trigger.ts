import { readFileSync } from 'node:fs';
import { defaultPayload } from '../../core/events/default-payloads.js';
import { EVENT_TYPES } from '../../core/events/event-types.js';
import { answerLabel, createDeliveryPoster } from '../../core/transfer/post-delivery.js';
import { parseConfig } from '../../core/config.js';
import { createNodeSignatureCrypto } from '../../node/node-crypto.js';
import { defineCommand, EXIT, UsageError } from '../command.js';
import { parseEventId, parseEventType } from '../event-arguments.js';
import { parseUrl, SECRET_HELP, signingSecret } from '../sending-options.js';

const utf8 = new TextDecoder('utf-8', { fatal: true });

export const triggerCommand = defineCommand({
  name: 'trigger',
  summary: 'Send a signed synthetic delivery of one event type to a receiver (the local one by default).',
  usage: 'podhook trigger <event-type> [--to URL] [--secret S] [--data JSON|@file] [--id UUID]',
  help: `Event types:
${[0, 4, 8].map((i) => `  ${EVENT_TYPES.slice(i, i + 4).join(', ')}`).join('\n')}

Options:
  --to URL          the receiver's webhook URL (default: the local one,
                    http://127.0.0.1:$PORT$WEBHOOK_PATH, i.e. http://127.0.0.1:3000/webhooks)
${SECRET_HELP}
  --data JSON       the body, instead of the type's default payload; @FILE reads it from a
                    file. Sent byte for byte; it must be JSON.
  --id UUID         the event id (default: a new random one; reuse one to see a duplicate)

The default payloads are plausible stand-ins (the service does not publish delivery
payloads): { "pod": { id, name, slug, status, tier, billing, … }, …fields of the event }.
Prints the receiver's answer.

Exit codes: 0 the receiver answered 2xx, 1 it did not (or could not be reached),
2 bad usage or configuration (no secret).`,
  options: {
    to: { type: 'string' },
    secret: { type: 'string' },
    data: { type: 'string' },
    id: { type: 'string' },
  },
  allowPositionals: true,
  async run({ values, positionals }, io) {
    const [typeText, ...extra] = positionals;
    if (typeText === undefined || extra.length > 0) throw new UsageError('give one event type');
    const eventType = parseEventType(typeText);
    const eventId = values.id === undefined ? crypto.randomUUID() : parseEventId(values.id, 'a valid --id');
    const config = parseConfig(io.env);
    const url = parseUrl(values.to ?? `http://127.0.0.1:${config.port}${config.webhookPath}`);
    const data = values.data;
    const body = data === undefined ? new TextEncoder().encode(JSON.stringify(defaultPayload(eventType, { now: Date.now() }))) : readData(data);
    const secret = await signingSecret(values.secret, io.env);

    const answer = await createDeliveryPoster({ url, secret, crypto: createNodeSignatureCrypto() })({ eventId, eventType, body });
    if (answer.status === null) {
      io.stderr(`podhook trigger: no answer from ${url} (${answer.error}): is the receiver running (podhook serve)?\n`);
      return EXIT.failure;
    }
    io.stdout(`${eventType} ${eventId} → ${url}\n${answerLabel(answer)}: ${answer.body.trim()}\n`);
    return answer.status >= 200 && answer.status <= 299 ? EXIT.ok : EXIT.failure;
  },
});

/** `--data`: inline JSON, or `@file` read byte for byte; either must parse as JSON. */
function readData(data: string): Uint8Array {
  let bytes: Uint8Array;
  if (data.startsWith('@')) {
    try {
      bytes = readFileSync(data.slice(1));
    } catch (error) {
      throw new UsageError(`--data ${data}: ${(error as Error).message}`);
    }
  } else {
    bytes = new TextEncoder().encode(data);
  }
  try {
    JSON.parse(utf8.decode(bytes));
  } catch (error) {
    throw new UsageError(`--data is not JSON: ${(error as Error).message}`);
  }
  return bytes;
}
