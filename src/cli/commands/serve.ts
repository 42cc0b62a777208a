import { customizeApp } from '../../app.js';
import { parseConfig } from '../../core/config.js';
import { loadValidRegistry } from '../../node/handler-registry.js';
import { createNodeLogger } from '../../node/logger.js';
import { startServer } from '../../node/serve.js';
import { startTracing } from '../../node/start-tracing.js';
import { defineCommand, EXIT } from '../command.js';
import { HANDLERS_HELP, HANDLERS_OPTION } from '../handlers-option.js';

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
  SHUTDOWN_GRACE_MS     on SIGTERM/SIGINT, time for open     (10000)
                        requests and running handlers
  ADMIN_TOKEN           turns on /_podhook/ (admin API, inspector); at least
                        32 characters                        (unset: off, 404)
  METRICS_TOKEN         bearer token GET /metrics asks for   (none: open; expose it
                        (16+ characters)                     only inside your network)
  MAX_CONNECTIONS       open connections; more are closed    (1024)
  MAX_INFLIGHT_BODY_BYTES  body bytes read at once, all      (33554432)
                        requests; beyond it 503 + Retry-After
  HEADERS_TIMEOUT_MS    time to receive a request's headers  (10000)
  REQUEST_TIMEOUT_MS    time to receive a whole request      (30000)
  KEEP_ALIVE_TIMEOUT_MS idle kept-alive connection closed    (5000)

  ALERT_WEBHOOK_URL     where alerts are POSTed: https://, or http:// to
                        127.0.0.1/::1/localhost (none: alerts only logged)
  ALERT_DOWNTIME_MINUTES  a longer gap in heartbeats is a downtime (5, >= 1)
  ALERT_MIN_INTERVAL_MINUTES  one alert per kind and key per this (10)

  OTEL_EXPORTER_OTLP_ENDPOINT  turns on OpenTelemetry traces, OTLP/HTTP to this
                        collector (+ /v1/traces; or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
                        as is)                              (none: tracing off)
  OTEL_TRACES_EXPORTER  otlp | console | none               (otlp when an endpoint is set)
  OTEL_SERVICE_NAME     the service in traces               (podhook)
  OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG  which traces are kept
                        (parentbased_always_on; docs/tracing.md)
  TRACING_FLUSH_TIMEOUT_MS  how long a stop waits for the last spans (5000)`;

export const serveCommand = defineCommand({
  name: 'serve',
  summary: 'Run the webhook receiver (what `npm start` runs).',
  usage: 'podhook serve [--handlers MODULE]',
  help: `Options:
${HANDLERS_HELP}

${CONFIG_HELP}

Routes: POST $WEBHOOK_PATH (ingest), GET /healthz, GET /readyz, GET /metrics,
/_podhook/ (admin API and inspector, with ADMIN_TOKEN).
Stops gracefully on SIGTERM or SIGINT.

Exit codes: 0 stopped by a signal, 1 failed while running, 2 invalid configuration (or an
invalid handler registry: the message names the module and what is wrong).`,
  options: { ...HANDLERS_OPTION },
  async run({ values }, io) {
    const config = parseConfig(io.env);
    const { handlers, payloads, module } = await loadValidRegistry(values.handlers);
    const logger = createNodeLogger({ level: config.logLevel, pretty: io.env.LOG_PRETTY === '1' });
    const tracing = await startTracing(io.env, logger);
    // Listen for signals before the server announces itself, so an early SIGTERM is graceful too.
    const signal = new Promise<NodeJS.Signals>((resolve) => {
      process.once('SIGTERM', resolve);
      process.once('SIGINT', resolve);
    });
    const server = await startServer({ config, logger, handlers, payloads, handlersModule: module, customize: customizeApp, catchStrays: true, flushTracing: tracing?.shutdown });
    // A registry the handler threads cannot load (it loaded here) stops the receiver, with its error.
    const unloadable = server.handlersReady.then(() => new Promise<never>(() => {}), (error: Error) => error);
    const stopped = await Promise.race([signal, unloadable]);
    if (stopped instanceof Error) {
      logger.error({ err: stopped.message }, 'handler threads could not load the handler registry: stopping');
      await server.close();
      io.stderr(`podhook serve: ${stopped.message}\n`);
      return EXIT.usage;
    }
    logger.info({ signal: stopped }, 'signal received');
    await server.close(); // the last spans are sent once the handlers are done, the threads' and this thread's at once
    return EXIT.ok;
  },
});
