import { existsSync, readFileSync } from 'node:fs';
import { defaultPayload } from '../../core/events/default-payloads.js';
import { EVENT_TYPES, type EventType } from '../../core/events/event-types.js';
import { PAYLOAD_MODULE_PATH, readPayloadModule, samplePayload } from '../../core/shapes/index.js';
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
  usage: 'podhook trigger <event-type> [--to URL] [--secret S] [--data JSON|@file] [--id UUID] [--payloads PATH]',
  help: `Event types:
${[0, 4, 8].map((i) => `  ${EVENT_TYPES.slice(i, i + 4).join(', ')}`).join('\n')}

Options:
  --to URL          the receiver's webhook URL (default: the local one,
                    http://127.0.0.1:$PORT$WEBHOOK_PATH, i.e. http://127.0.0.1:3000/webhooks)
${SECRET_HELP}
  --data JSON       the body, instead of the type's default payload; @FILE reads it from a
                    file. Sent byte for byte; it must be JSON.
  --id UUID         the event id (default: a new random one; reuse one to see a duplicate)
  --payloads PATH   the module \`podhook schemas\` generated, to build the payload from
                    (default ${PAYLOAD_MODULE_PATH}, when it exists)

Without --data, the payload is made from the type's learned shape in that module, so it looks
like real traffic: the fields every sample had, a recorded value of each low-cardinality string,
fresh uuids, date-times of now. A type without a learned shape gets a plausible stand-in (the
service does not publish delivery payloads): { "pod": { id, name, slug, status, tier, billing,
… }, …fields of the event }. stderr says which. Prints the receiver's answer.

Exit codes: 0 the receiver answered 2xx, 1 it did not (or could not be reached),
2 bad usage or configuration (no secret).`,
  options: {
    to: { type: 'string' },
    secret: { type: 'string' },
    data: { type: 'string' },
    id: { type: 'string' },
    payloads: { type: 'string' },
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
    let body: Uint8Array;
    if (data !== undefined) body = readData(data);
    else {
      const { payload, from } = builtPayload(eventType, values.payloads);
      io.stderr(`podhook trigger: ${from}\n`);
      body = new TextEncoder().encode(JSON.stringify(payload));
    }
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

/** The payload made from the type's learned shape in the generated module, else its default payload; and which it is. */
function builtPayload(type: EventType, module: string | undefined): { payload: unknown; from: string } {
  const path = module ?? PAYLOAD_MODULE_PATH;
  const now = Date.now();
  if (module === undefined && !existsSync(path)) return { payload: defaultPayload(type, { now }), from: `the default ${type} payload (no ${path})` };
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new UsageError(`--payloads ${path}: ${(error as Error).message}`);
  }
  let shapes;
  try {
    shapes = readPayloadModule(text);
  } catch (error) {
    throw new UsageError(`${path}: ${(error as Error).message}`);
  }
  if (!Object.hasOwn(shapes.types, type)) return { payload: defaultPayload(type, { now }), from: `the default ${type} payload (${path} has no shape learned for it)` };
  const learned = shapes.types[type]!;
  return { payload: samplePayload(learned.shape, { now }), from: `a payload made from the ${type} shape in ${path} (learned from ${learned.samples} samples)` };
}

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
