import { randomUUID } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, openSync, statSync, writeSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { validateCreateWebhookBody } from '../../service-api/create-webhook-body.js';
import { secretFingerprint } from '../../service-api/secret-fingerprint.js';
import { baseUrlProblem } from '../../core/pods/base-url.js';
import { createServiceClient } from '../../service-api/service-client.js';
import { ServiceError } from '../../service-api/service-error.js';
import { API_KEY_HOME, type CreatedWebhook } from '../../service-api/webhook.js';
import { EVENT_TYPES } from '../../core/events/event-types.js';
import { createRouter } from '../../core/dispatch/router.js';
import { describeStore, parseConfig } from '../../core/config.js';
import { loadValidHandlers } from '../../node/handler-registry.js';
import { openConfiguredStore, type OpenedStore } from '../../store/node-store.js';
import { defineCommand, EXIT, UsageError } from '../command.js';
import { HANDLERS_HELP, HANDLERS_OPTION } from '../handlers-option.js';
import { commandApiKey } from '../stored-api-key.js';
import { wranglerSecretPut } from '../wrangler-secret-put.js';

/** `podhook register`'s exit codes: one per outcome a script may want to tell apart. */
export const REGISTER_EXIT = {
  ...EXIT,
  unauthorized: 3,
  invalidRequest: 4,
  limitExceeded: 5,
  rateLimited: 6,
  unavailable: 7,
  secretNotKept: 8,
} as const;

const MAX_RATE_LIMIT_RETRIES = 3;
const MAX_WAIT_SECONDS = 120;

export const registerCommand = defineCommand({
  name: 'register',
  summary: 'Create the webhook at the service and store its one-time signing secret.',
  usage: 'podhook register --url <https url> [--events T,T,... | --only-handled [--handlers MODULE]] [--show-secret] [--secret-file PATH] [--wrangler]',
  help: `Creates the webhook with POST $SVC_BASE_URL/pods/v1/webhooks and stores the signing secret
the service shows once in the store (DATABASE_URL or DATABASE_PATH), where the running receivers
accept it at once (no restart).

Options:
  --url URL          where the service delivers: https only; no credentials, localhost,
                     .internal / .local names or non-public IP addresses (in any spelling).
                     Checked before anything is sent.
  --events T,T,...   the event types to receive (of: ${EVENT_TYPES.join(', ')}).
                     Without it (and without --only-handled) event_types is omitted: every event.
  --only-handled     only the types some handler in handlers/index.ts takes (a wildcard
                     handler takes every type it matches); prints them before sending.
                     \`podhook handlers\` shows the same view
${HANDLERS_HELP}
  --show-secret      also print the secret (it is never printed otherwise)
  --secret-file PATH also write the secret to PATH, created owner-only (0600); PATH must not exist
  --wrangler         also pipe the secret (on stdin, never argv) to
                     \`wrangler secret put SVC_WEBHOOK_SECRET\` for the edge worker, run in this folder
                     ($WRANGLER overrides the command, e.g. WRANGLER="npx wrangler --env production")
  --allow-local-url  accept http and local URLs: only for \`podhook emulate --allow-local-url\`;
                     the service itself refuses them (--allow-local-urls is accepted too)

Environment:
  SVC_API_KEY    the compute API key, sent as X-API-Key (minted in ${API_KEY_HOME});
                 unset: the key stored with podhook secrets add --api-key
  SVC_BASE_URL   the compute host, e.g. https://compute.example.com (http only for 127.0.0.1/localhost)
  DATABASE_PATH  where the secret is stored, as for the server (./data/podhook.db)
  DATABASE_URL   PostgreSQL to store it in instead, as for the server (wins over DATABASE_PATH)

Exit codes:
  0  registered; the secret is stored (and written / piped as asked)
  1  the service refused or failed otherwise (forbidden, an unexpected answer, another code)
  2  bad usage or configuration (URL, event types, SVC_API_KEY, SVC_BASE_URL, DATABASE_PATH):
     nothing was sent
  3  unauthorized: the service refused SVC_API_KEY
  4  invalid_request: the service refused the body (its details are printed)
  5  limit_exceeded: the account already has 10 webhooks
  6  rate_limited: still limited after ${MAX_RATE_LIMIT_RETRIES} waits (or asked to wait over ${MAX_WAIT_SECONDS} s)
  7  internal error at the service, or the service could not be reached
  8  the webhook was created but its secret could not be stored, written or piped
On a failure the service's x-request-id is printed, for support.`,
  options: {
    url: { type: 'string' },
    events: { type: 'string' },
    'only-handled': { type: 'boolean' },
    'show-secret': { type: 'boolean' },
    'secret-file': { type: 'string' },
    wrangler: { type: 'boolean' },
    'allow-local-url': { type: 'boolean' },
    ...HANDLERS_OPTION,
  },
  aliases: { 'allow-local-urls': 'allow-local-url' },
  async run({ values }, io) {
    const say = (line: string) => io.stderr(`podhook register: ${line}\n`);

    // Everything that can be checked locally is, before a request costs rate-limit budget.
    const url = values.url;
    if (url === undefined) throw new UsageError('--url is required');
    const onlyHandled = values['only-handled'] === true;
    if (values.handlers !== undefined && !onlyHandled) throw new UsageError('--handlers is only used with --only-handled');
    const eventTypes = await chosenEventTypes(values.events, onlyHandled, values.handlers);
    if (onlyHandled && eventTypes) say(`--only-handled: subscribing to the ${eventTypes.length} handled type(s): ${eventTypes.join(', ')}`);
    const verdict = validateCreateWebhookBody(
      { url, ...(eventTypes && { event_types: eventTypes }) },
      { allowLocal: values['allow-local-url'] === true },
    );
    if (!verdict.ok) throw new UsageError(`not sent: ${verdict.message}`);

    const apiKey = io.env.SVC_API_KEY?.trim() || (await storedKey(io.env));
    if (!apiKey) {
      say(`SVC_API_KEY is not set: create a compute API key in ${API_KEY_HOME}, then export SVC_API_KEY (or store it: podhook secrets add --api-key < key.txt). Nothing was sent.`);
      return EXIT.usage;
    }
    const baseUrl = checkBaseUrl(io.env.SVC_BASE_URL);
    const secretFile = values['secret-file'] === undefined ? undefined : resolve(values['secret-file']);
    if (secretFile !== undefined) checkSecretFilePath(secretFile);
    const config = parseConfig(io.env);

    // Open the database first: the secret is shown once, so there must be somewhere to put it.
    let opened: OpenedStore;
    try {
      opened = await openConfiguredStore(config);
    } catch (error) {
      say(`cannot open the database at ${describeStore(config).database} (${(error as Error).message}). Nothing was sent.`);
      return EXIT.usage;
    }
    try {
      const client = createServiceClient({
        baseUrl,
        apiKey,
        userAgent: 'podhook-cli',
        maxRateLimitRetries: MAX_RATE_LIMIT_RETRIES,
        maxWaitSeconds: MAX_WAIT_SECONDS,
        sleep: io.sleep,
        onRateLimited: ({ waitSeconds, retry, maxRetries, requestId }) =>
          say(`rate limited by the service (request id ${requestId}); waiting ${waitSeconds} s before retry ${retry} of ${maxRetries}…`),
      });
      let webhook: CreatedWebhook;
      try {
        webhook = await client.createWebhook(verdict.body);
      } catch (error) {
        if (error instanceof ServiceError) return reportServiceError(error, baseUrl, say);
        throw error;
      }

      const fingerprint = await secretFingerprint(webhook.secret);
      const kept: string[] = [];
      const problems: string[] = [];
      try {
        await opened.store.addSecret({
          id: randomUUID(),
          webhookId: webhook.id,
          url: webhook.url,
          eventTypes: webhook.event_types ?? verdict.body.event_types ?? null,
          secret: webhook.secret,
          fingerprint,
          createdAt: Date.now(),
        });
        kept.push(`stored in ${opened.where} as fingerprint ${fingerprint}: the running receiver accepts it now`);
      } catch (error) {
        problems.push(`the secret could not be stored in ${opened.where} (${(error as Error).message})`);
      }
      if (secretFile !== undefined) {
        try {
          writeSecretFile(secretFile, webhook.secret);
          kept.push(`written to ${secretFile} (owner-only)`);
        } catch (error) {
          problems.push(`the secret could not be written to ${secretFile} (${(error as Error).message})`);
        }
      }
      if (values.wrangler) {
        const result = await wranglerSecretPut({ name: 'SVC_WEBHOOK_SECRET', value: webhook.secret, env: io.env, onOutput: io.stderr });
        if (result.ok) kept.push('set as SVC_WEBHOOK_SECRET with wrangler secret put');
        else problems.push(`wrangler secret put failed (${result.reason})`);
      }

      io.stdout(summary(webhook, verdict.body.event_types === undefined, kept, values['show-secret'] === true));
      if (problems.length > 0) {
        for (const p of problems) say(p);
        say(
          kept.length > 0
            ? `webhook ${webhook.id} was created; the secret is kept only where listed above.`
            : `webhook ${webhook.id} was created but its secret was not kept anywhere: rotate the endpoint's secret at the service.`,
        );
        return REGISTER_EXIT.secretNotKept;
      }
      return EXIT.ok;
    } finally {
      await opened.close();
    }
  },
});

/** The key `podhook secrets add --api-key` stored, when the configuration reads and a database is there. */
async function storedKey(env: Record<string, string | undefined>): Promise<string | undefined> {
  let config;
  try {
    config = parseConfig(env);
  } catch {
    return undefined; // the configuration's own error is reported below, where it is parsed again
  }
  return (await commandApiKey(config))?.key;
}

/** `--events` split and trimmed, or the handled types, or undefined for every event. */
async function chosenEventTypes(events: string | undefined, onlyHandled: boolean, registry: string | undefined): Promise<string[] | undefined> {
  if (events !== undefined && onlyHandled) throw new UsageError('--events and --only-handled cannot be used together');
  if (events !== undefined) return events.split(',').map((s) => s.trim()).filter((s) => s !== '');
  if (!onlyHandled) return undefined;
  const router = createRouter(await loadValidHandlers(registry));
  const handled = EVENT_TYPES.filter((type) => router.handlersFor(type).length > 0);
  if (handled.length === 0) throw new UsageError('--only-handled: no handler module takes any event type (see handlers/index.ts)');
  return handled;
}

function checkBaseUrl(value: string | undefined): string {
  if (!value?.trim()) {
    throw new UsageError('SVC_BASE_URL is not set: the compute host, e.g. SVC_BASE_URL=https://compute.example.com');
  }
  const problem = baseUrlProblem(value);
  if (problem) throw new UsageError(`SVC_BASE_URL ${problem}`);
  return new URL(value.trim()).href;
}

function checkSecretFilePath(path: string): void {
  if (existsSync(path)) throw new UsageError(`--secret-file ${path} already exists: choose a new path (it is never overwritten)`);
  const dir = dirname(path);
  if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new UsageError(`--secret-file: the folder ${dir} does not exist`);
}

/** Creates the file owner-only (it must not exist), writes the secret and a newline, syncs it. */
function writeSecretFile(path: string, secret: string): void {
  const fd = openSync(path, 'wx', 0o600);
  try {
    writeSync(fd, `${secret}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

function summary(webhook: CreatedWebhook, omittedTypes: boolean, kept: string[], showSecret: boolean): string {
  const types = webhook.event_types?.length
    ? webhook.event_types.join(', ')
    : omittedTypes
      ? 'every event (event_types omitted: the service sends all types, including any added later)'
      : '(none reported by the service)';
  const rows: [string, string][] = [
    ['id', webhook.id],
    ['url', webhook.url],
    ['event types', types],
    ['enabled', webhook.enabled === false ? 'no' : 'yes'],
    ...kept.map((k): [string, string] => ['secret', k]),
  ];
  if (showSecret) rows.push(['secret value', webhook.secret]);
  else rows.push(['', 'the secret is not printed (--show-secret prints it)']);
  if (webhook.secret_note) rows.push(['note', webhook.secret_note]);
  return `Webhook registered.\n${rows.map(([k, v]) => `  ${k.padEnd(13)} ${v}`).join('\n')}\n`;
}

function reportServiceError(error: ServiceError, baseUrl: string, say: (line: string) => void): number {
  const code = error.code;
  let exit: number = EXIT.failure;
  switch (code) {
    case 'unauthorized':
      say(`the service refused SVC_API_KEY (unauthorized): check it, or mint a new compute API key in ${API_KEY_HOME}.`);
      exit = REGISTER_EXIT.unauthorized;
      break;
    case 'forbidden':
      say(`the service does not allow this key to create webhooks (forbidden): ${error.message}`);
      break;
    case 'invalid_request':
      say(`the service refused the request (invalid_request): ${error.message}`);
      if (error.details) say(`details: ${JSON.stringify(error.details)}`);
      exit = REGISTER_EXIT.invalidRequest;
      break;
    case 'limit_exceeded':
      say('the account already has the most webhooks allowed: 10 per account (limit_exceeded). Delete one at the service first.');
      exit = REGISTER_EXIT.limitExceeded;
      break;
    case 'rate_limited': {
      const wait = Number(error.details?.retry_after_seconds);
      const after = Number.isFinite(wait) ? ` in ${Math.ceil(wait)} s` : ' later';
      say(
        `still rate limited by the service (rate_limited); podhook waits at most ${MAX_RATE_LIMIT_RETRIES} times, up to ${MAX_WAIT_SECONDS} s each: try again${after}.`,
      );
      exit = REGISTER_EXIT.rateLimited;
      break;
    }
    case 'internal':
      say(`the service failed (internal): the webhook may or may not exist; check at the service before trying again.`);
      exit = REGISTER_EXIT.unavailable;
      break;
    case 'network_error':
      say(`${error.message}: check SVC_BASE_URL (${baseUrl}) and the network. If the request got through, the webhook may exist.`);
      exit = REGISTER_EXIT.unavailable;
      break;
    case 'unexpected_response':
      say(error.message);
      break;
    default:
      say(`the service refused the request (${code}): ${error.message}`);
  }
  say(`request id: ${error.requestId}${code === 'network_error' ? ' (sent; no answer)' : ''}`);
  return exit;
}
