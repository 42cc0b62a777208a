import { randomBytes } from 'node:crypto';
import { SENDER_RETRY_MINUTES } from '../../core/ingest/sender-retry-ladder.js';
import { startEmulator } from '../../emulator/start-emulator.js';
import { createNodeLogger } from '../../node/logger.js';
import { defineCommand, EXIT, UsageError } from '../command.js';

export const emulateCommand = defineCommand({
  name: 'emulate',
  summary: 'Run a local stand-in of the service: webhooks, signed events and retries, pods, actions, keys, limits.',
  usage: 'podhook emulate [--port N] [--host H] [--time-scale X] [--api-key K] [--allow-local-url] [--pods N] [--result-delay-ms MS]',
  help: `The service, on this machine, for end-to-end tests:

  POST /pods/v1/webhooks     as the spec describes: X-API-Key, the URL and event-type rules,
                             {error:{code,message,details}}, x-request-id, 10 webhooks, the
                             60-a-minute write bucket, the secret shown once with secret_note
  GET  /pods/v1/pods         the pods, newest first, paged (?limit= ?cursor= ?external_ref=),
                             within the 240-a-minute read bucket
  POST /pods/v1/pods/{id}/actions
                             {"action":"diagnose"}: 202, emits a signed pod.action.queued;
                             diagnose and logs write last_result after --result-delay-ms
  GET  /pods/v1/pods/{id}/actions
                             the poll route: {actions, last_result}
  POST /pods/v1/pods/{id}/keys
                             a pod endpoint key, its secret shown once (30 an hour)
  POST /pods/v1/pods/{id}/chat-ticket
                             a chat ticket (write bucket)
  POST /_emulator/events     {"type":"pod.created","data":{...},"id":"<uuid>"} (data and id
                             optional): delivers to every webhook that takes the type, signed
                             as the service signs (x-svc-signature t=…,v1=…), retried after
                             ${SENDER_RETRY_MINUTES.join(', ')} minutes × --time-scale, then the
                             webhook gets disabled_by_us_at and nothing more is sent to it
  GET  /_emulator/webhooks   the webhooks: failure_count, last_error, last_delivery_at,
                             disabled_by_us_at (never the secret)
  GET  /_emulator/deliveries every delivery with its attempts (?event_id= ?webhook_id= ?status=)
  POST /_emulator/faults     {"count":2,"status":500,"code":"internal"}: the next requests to
                             /pods/v1 answer that error
  GET  /_emulator/pods       the pods; POST one ({"external_ref":"x"}, every field optional),
                             DELETE /_emulator/pods/{id} to remove one (as if destroyed)
  GET  /_emulator/actions    every action queued, with its request id
  GET  /_emulator/buckets    requests let through and refused (429) per bucket

Options:
  --port N            (default 4010; 0 picks a free port)
  --host H            (default 127.0.0.1)
  --time-scale X      multiplies the retry delays: 0.001 turns a minute into 60 ms (default 1)
  --api-key K         the key X-API-Key must carry (default: SVC_API_KEY, else a random one,
                      printed at start)
  --allow-local-url   accept http and local webhook URLs (127.0.0.1, localhost…) so deliveries
                      reach a receiver on this machine; register them with
                      podhook register --allow-local-url (--allow-local-urls is
                      accepted too)
  --pods N            pods made at start (default 3; 0 to 1000)
  --result-delay-ms MS
                      how long after diagnose or logs is queued its last_result is written
                      (default: 60000 to 120000 at random, as the spec says)

Logs JSON lines on stdout (webhooks created, each delivery attempt; never a secret).
Exit codes: 0 stopped by SIGTERM or SIGINT, 1 could not start, 2 bad usage.`,
  options: {
    port: { type: 'string' },
    host: { type: 'string' },
    'time-scale': { type: 'string' },
    'api-key': { type: 'string' },
    'allow-local-url': { type: 'boolean' },
    pods: { type: 'string' },
    'result-delay-ms': { type: 'string' },
  },
  aliases: { 'allow-local-urls': 'allow-local-url' },
  async run({ values }, io) {
    const portText = values.port ?? '4010';
    if (!/^\d{1,5}$/.test(portText) || Number(portText) > 65535) throw new UsageError('--port must be a whole number from 0 to 65535');
    const scaleText = values['time-scale'] ?? '1';
    const timeScale = Number(scaleText);
    if (!/^\d*\.?\d+(e-?\d+)?$/i.test(scaleText) || !(timeScale > 0) || timeScale > 10) {
      throw new UsageError('--time-scale must be a number above 0 and at most 10 (e.g. 0.001)');
    }
    const seedText = values.pods ?? '3';
    if (!/^\d{1,4}$/.test(seedText) || Number(seedText) > 1000) throw new UsageError('--pods must be a whole number from 0 to 1000');
    const delayText = values['result-delay-ms'];
    if (delayText !== undefined && (!/^\d{1,9}$/.test(delayText) || Number(delayText) > 600_000)) {
      throw new UsageError('--result-delay-ms must be a whole number of ms from 0 to 600000');
    }
    const offeredKey = values['api-key'] ?? io.env.SVC_API_KEY;
    const apiKey = offeredKey?.trim() || `emu_${randomBytes(16).toString('hex')}`;
    const logger = createNodeLogger({ level: 'info', pretty: io.env.LOG_PRETTY === '1' });

    const signal = new Promise<NodeJS.Signals>((resolve) => {
      process.once('SIGTERM', resolve);
      process.once('SIGINT', resolve);
    });
    const running = await startEmulator({
      apiKey,
      port: Number(portText),
      host: values.host ?? '127.0.0.1',
      timeScale,
      allowLocalUrls: values['allow-local-url'] === true,
      seedPods: Number(seedText),
      resultDelayMs: delayText === undefined ? undefined : Number(delayText),
      logger,
    });
    const local = values['allow-local-url'] ? ' --allow-local-url' : '';
    io.stderr(`podhook emulate: the service stand-in listens on ${running.url}
  register:   SVC_BASE_URL=${running.url} SVC_API_KEY=${offeredKey?.trim() ? '<your key>' : apiKey} npx podhook register --url <url>${local}
  emit:       curl -X POST ${running.url}/_emulator/events -H 'content-type: application/json' -d '{"type":"pod.created"}'
  log:        curl ${running.url}/_emulator/deliveries
  pods:       SVC_BASE_URL=${running.url} SVC_API_KEY=… npx podhook pods   (${running.emulator.pods.all().length} seeded)
${tryLine(running.emulator.pods.all()[0]?.id)}  retries:    ${SENDER_RETRY_MINUTES.join(', ')} minutes × ${timeScale}
`);
    logger.info({ url: running.url, time_scale: timeScale, allow_local_urls: values['allow-local-url'] === true }, 'emulator listening');
    logger.info({ signal: await signal }, 'signal received');
    await running.close();
    return EXIT.ok;
  },
});

/** A delivery about a seeded pod, for the example that acts on it (handlers/diagnose-failed-backup.ts); nothing without pods. */
function tryLine(podId: string | undefined): string {
  return podId === undefined ? '' : `  try:        npx podhook trigger pod.backup.failed --data '{"pod":{"id":"${podId}"}}'   (a failed backup of a seeded pod)\n`;
}
