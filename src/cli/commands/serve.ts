import { parseConfig } from '../../core/config.js';
import { createNodeLogger } from '../../node/logger.js';
import { startServer } from '../../node/serve.js';
import { defineCommand, EXIT } from '../command.js';
import { loadHandlers } from '../load-handlers.js';

export const CONFIG_HELP = `Environment (validated at start; a bad value stops with one line naming it):
  PORT, HOST            where the server listens          (3000, 0.0.0.0)
  DATABASE_PATH         the SQLite file                    (./data/podhook.db)
  DATABASE_URL          postgres://USER:PASS@HOST:PORT/DB: PostgreSQL shared by
                        replicas instead of SQLite; wins over DATABASE_PATH (none)
  SVC_WEBHOOK_SECRET    signing secret(s), comma-separated (none; secrets stored by
                        \`podhook register\` are accepted too)
  WEBHOOK_PATH          the ingest route                   (/webhooks)
  MAX_BODY_BYTES        body cap                           (262144)
  LOG_LEVEL             pino level                         (info)
  RETENTION_DAYS        days processed rows are kept (>= 2) (30)
  DISPATCHER            on | off (off: ingest only)         (on)
  DISPATCH_CONCURRENCY  deliveries dispatched at once        (16)
  DISPATCH_MAX_ATTEMPTS attempts before a delivery is dead   (8)
  DISPATCH_POLL_MS      how often due retries are looked for (1000)
  HANDLER_TIMEOUT_MS    time limit per handler call          (30000)
  RETRY_BASE_MS, RETRY_MAX_MS  backoff: base and cap         (2000, 900000)
  ALERT_WEBHOOK_URL     where alerts are POSTed: https://, or http:// to
                        127.0.0.1/::1/localhost (none: alerts only logged)
  ALERT_DOWNTIME_MINUTES  a longer gap in heartbeats is a downtime (5, >= 1)
  ALERT_MIN_INTERVAL_MINUTES  one alert per kind and key per this (10)`;

export const serveCommand = defineCommand({
  name: 'serve',
  summary: 'Run the webhook receiver (what `npm start` runs).',
  usage: 'podhook serve [--handlers MODULE]',
  help: `Options:
  --handlers MODULE  the handler list to run: a module exporting \`handlers\` (or a default
                     export) like handlers/index.ts (default: this project's handlers/)

${CONFIG_HELP}

Routes: POST $WEBHOOK_PATH (ingest), GET /healthz, GET /readyz, GET /metrics.
Stops gracefully on SIGTERM or SIGINT.

Exit codes: 0 stopped by a signal, 1 failed while running, 2 invalid configuration.`,
  options: { handlers: { type: 'string' } },
  async run({ values }, io) {
    const config = parseConfig(io.env);
    const handlers = await loadHandlers(values.handlers as string | undefined);
    const logger = createNodeLogger({ level: config.logLevel, pretty: io.env.LOG_PRETTY === '1' });
    // Listen for signals before the server announces itself, so an early SIGTERM is graceful too.
    const signal = new Promise<NodeJS.Signals>((resolve) => {
      process.once('SIGTERM', resolve);
      process.once('SIGINT', resolve);
    });
    const server = await startServer({ config, logger, handlers });
    logger.info({ signal: await signal }, 'signal received');
    await server.close();
    return EXIT.ok;
  },
});
