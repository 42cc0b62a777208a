import { randomUUID } from 'node:crypto';
import { secretFingerprint } from '../../service-api/secret-fingerprint.js';
import { DEFAULT_ACCOUNT } from '../../core/pods/api-key-store.js';
import type { DeliveryStore, StoredSecret } from '../../core/delivery-store.js';
import { parseConfig, type Config } from '../../core/config.js';
import { openConfiguredStore } from '../../store/node-store.js';
import { defineCommand, EXIT, UsageError, type CommandIo } from '../command.js';
import { formatTable } from '../format-table.js';
import { storeExists } from '../store-exists.js';

const MAX_SECRET_BYTES = 1024;

/** What `secrets list` shows of a stored secret: never its value. */
export function storedSecretJson(s: StoredSecret) {
  return {
    id: s.id,
    webhook_id: s.webhookId,
    url: s.url,
    event_types: s.eventTypes,
    fingerprint: s.fingerprint,
    created_at: new Date(s.createdAt).toISOString(),
  };
}

export const secretsCommand = defineCommand({
  name: 'secrets',
  summary: 'List, add or remove the signing secrets stored in the database.',
  usage: 'podhook secrets list [--json] | secrets add [--webhook-id ID] [--url URL] < secret | secrets add --api-key < key | secrets remove <id|fingerprint> | secrets remove --api-key',
  help: `Every stored secret is accepted at once (with those in SVC_WEBHOOK_SECRET), and the running
receiver sees a change without a restart: to rotate, add the new secret, switch the sender
to it, then remove the old one. There is no moment when a delivery has no valid secret.

  list [--json]      id, webhook id, url, fingerprint (first 12 hex of its SHA-256), created
                     at; never the value
  add                reads one secret from stdin (a pipe or a file, not a terminal), e.g. one
                     obtained at the service's dashboard or a rotated one:
                       podhook secrets add --webhook-id <id> < new-secret.txt
    --webhook-id ID  the webhook it belongs to (a label)
    --url URL        the webhook's URL (a label)
  add --api-key      reads the service's compute API key from stdin instead and stores it apart
                     from the signing secrets (never accepted as one): what \`podhook pods\`, the
                     admin API's pod report and handlers send as X-API-Key when SVC_API_KEY is
                     unset (SVC_API_KEY wins). One per database: a second replaces the first.
                     On the Worker use a Worker secret: wrangler secret put SVC_API_KEY
  remove <id|fingerprint>
                     removes the secret with that id or fingerprint (see list)
  remove --api-key   removes the stored API key

Reads DATABASE_URL's PostgreSQL when set, else DATABASE_PATH (default ./data/podhook.db), like
the server.
Exit codes: 0 done, 1 nothing to list from / no such secret / already stored / no API key
stored, 2 bad usage or configuration (including an empty or malformed secret on stdin, or the
API key given as a signing secret or the other way round).`,
  options: {
    json: { type: 'boolean' },
    'webhook-id': { type: 'string' },
    url: { type: 'string' },
    'api-key': { type: 'boolean' },
  },
  allowPositionals: true,
  async run({ values, positionals }, io) {
    const [action, ...rest] = positionals;
    const only = (allowed: string[]) => {
      const extra = Object.entries(values).flatMap(([k, v]) => (v !== undefined && !allowed.includes(k) ? [k] : []));
      if (extra.length > 0) throw new UsageError(`secrets ${action} does not take --${extra[0]}`);
    };
    switch (action) {
      case 'list':
        only(['json']);
        if (rest.length > 0) throw new UsageError('secrets list takes no arguments');
        return list(values.json === true, io);
      case 'add':
        if (rest.length > 0) throw new UsageError('secrets add reads the secret from stdin, not from its arguments (they show in ps and shell history)');
        if (values['api-key']) {
          only(['api-key']);
          return addApiKey(io);
        }
        only(['webhook-id', 'url']);
        return add(values['webhook-id'], values.url, io);
      case 'remove':
        if (values['api-key']) {
          only(['api-key']);
          if (rest.length > 0) throw new UsageError('secrets remove --api-key takes no arguments');
          return removeApiKey(io);
        }
        only([]);
        if (rest.length !== 1) throw new UsageError('secrets remove takes one id or fingerprint');
        return remove(rest[0]!, io);
      default:
        throw new UsageError(action === undefined ? 'say list, add or remove' : `unknown action "${action}" (list, add or remove)`);
    }
  },
});

async function list(json: boolean, io: CommandIo): Promise<number> {
  const config = parseConfig(io.env);
  if (!storeExists(config)) {
    io.stderr(`podhook: no database at ${config.databasePath} (set DATABASE_PATH, or run podhook register first)\n`);
    return EXIT.failure;
  }
  const { store, close } = await openConfiguredStore(config);
  try {
    const rows = (await store.listSecrets()).map(storedSecretJson);
    if (json) {
      io.stdout(`${JSON.stringify(rows, null, 2)}\n`);
    } else {
      io.stdout(rows.length === 0 ? 'No stored secrets.\n' : formatTable(['id', 'webhook_id', 'fingerprint', 'created_at', 'url'], rows, 80));
      if (config.secrets.length > 0) io.stdout(`SVC_WEBHOOK_SECRET holds ${config.secrets.length} more (accepted too, not listed).\n`);
      const apiKey = await store.readApiKey();
      if (apiKey) {
        io.stdout(`API key (not a signing secret): stored, fingerprint ${apiKey.fingerprint}, ${new Date(apiKey.createdAt).toISOString()}${config.pods.apiKey ? '; SVC_API_KEY is set and wins' : ''}.\n`);
      }
    }
    return EXIT.ok;
  } finally {
    await close();
  }
}

async function add(webhookId: string | undefined, url: string | undefined, io: CommandIo): Promise<number> {
  const secret = await readSecret(io.stdin);
  const config = parseConfig(io.env);
  const fingerprint = await secretFingerprint(secret);
  const { store, close } = await openConfiguredStore(config);
  try {
    const apiKey = await store.readApiKey();
    if (secret === apiKey?.secret || secret === config.pods.apiKey) {
      io.stderr('podhook secrets: this is the compute API key, not a webhook signing secret: it is never accepted as one (store it with --api-key)\n');
      return EXIT.usage;
    }
    const id = randomUUID();
    const added = await store.addSecret({ id, webhookId: webhookId ?? null, url: url ?? null, eventTypes: null, secret, fingerprint, createdAt: Date.now() });
    if (!added) {
      io.stderr(`podhook secrets: this secret is already stored (fingerprint ${fingerprint})\n`);
      return EXIT.failure;
    }
    const count = (await store.listSecrets()).length;
    io.stdout(`Secret stored: id ${id}, fingerprint ${fingerprint}. The running receiver accepts it now (${count} stored secret${count === 1 ? '' : 's'}).\n`);
    return EXIT.ok;
  } finally {
    await close();
  }
}

async function addApiKey(io: CommandIo): Promise<number> {
  const key = await readSecret(io.stdin);
  const config = parseConfig(io.env);
  const fingerprint = await secretFingerprint(key);
  const { store, close } = await openConfiguredStore(config);
  try {
    if (config.secrets.includes(key) || (await store.listSecrets()).some((s) => s.secret === key)) {
      io.stderr('podhook secrets: this is a webhook signing secret, not a compute API key: nothing was stored\n');
      return EXIT.usage;
    }
    const replaced = await store.putApiKey({ account: DEFAULT_ACCOUNT, secret: key, fingerprint, createdAt: Date.now() });
    io.stdout(
      `API key stored${replaced ? ' (replacing the one before)' : ''}: fingerprint ${fingerprint}. It is sent only as X-API-Key` +
        `${config.pods.apiKey ? '; SVC_API_KEY is set and wins over it' : ''}.\n`,
    );
    return EXIT.ok;
  } finally {
    await close();
  }
}

async function removeApiKey(io: CommandIo): Promise<number> {
  return onExistingStore(io, async (store) => {
    if (!(await store.removeApiKey())) {
      io.stderr('podhook secrets: no API key is stored\n');
      return EXIT.failure;
    }
    io.stdout('API key removed.\n');
    return EXIT.ok;
  });
}

/** Runs `work` on the configured store when its database exists; says so and exits 1 otherwise. */
async function onExistingStore(io: CommandIo, work: (store: DeliveryStore, config: Config) => Promise<number>): Promise<number> {
  const config = parseConfig(io.env);
  if (!storeExists(config)) {
    io.stderr(`podhook: no database at ${config.databasePath} (set DATABASE_PATH)\n`);
    return EXIT.failure;
  }
  const { store, close } = await openConfiguredStore(config);
  try {
    return await work(store, config);
  } finally {
    await close();
  }
}

async function remove(idOrFingerprint: string, io: CommandIo): Promise<number> {
  return onExistingStore(io, async (store, config) => {
    const removed = await store.removeSecret(idOrFingerprint);
    if (removed === 0) {
      io.stderr(`podhook secrets: no stored secret has the id or fingerprint ${idOrFingerprint} (see podhook secrets list)\n`);
      return EXIT.failure;
    }
    const left = (await store.listSecrets()).length;
    io.stdout(`Removed ${idOrFingerprint}; ${left} stored secret${left === 1 ? '' : 's'} left.\n`);
    if (left === 0 && config.secrets.length === 0) {
      io.stderr('podhook secrets: no signing secret is left (none stored, SVC_WEBHOOK_SECRET unset): the receiver now answers deliveries with 503.\n');
    }
    return EXIT.ok;
  });
}

/** One secret from stdin: surrounding whitespace dropped; refused when empty, multi-part or from a terminal. */
async function readSecret(stdin: NodeJS.ReadableStream): Promise<string> {
  if ((stdin as { isTTY?: boolean }).isTTY) {
    throw new UsageError('secrets add reads the secret from stdin: pipe it in (e.g. podhook secrets add < secret.txt), so it is not echoed on screen');
  }
  let text = '';
  for await (const chunk of stdin) {
    text += String(chunk);
    if (text.length > MAX_SECRET_BYTES * 4) break;
  }
  const secret = text.trim();
  if (secret === '') throw new UsageError('no secret on stdin');
  if (new TextEncoder().encode(secret).length > MAX_SECRET_BYTES) throw new UsageError(`the secret on stdin is longer than ${MAX_SECRET_BYTES} bytes`);
  if (/[\s\u0000-\u001f\u007f]/.test(secret)) throw new UsageError('the secret on stdin must be one word: no spaces, line breaks or control characters inside');
  return secret;
}
