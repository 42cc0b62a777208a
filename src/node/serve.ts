import type { AddressInfo } from 'node:net';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Logger } from '../core/observability/logger.js';
import { describeStore, type Config } from '../core/config.js';
import { createNodeListener } from './node-listener.js';
import { loadStoreBackend } from '../store/node-store.js';
import { createNodeRuntime, type NodeRuntime, type NodeRuntimeOptions } from './node-runtime.js';

export interface RunningServer {
  url: string;
  port: number;
  runtime: NodeRuntime;
  /** Resolves once handlers can run (the handler threads loaded the registry); rejects with the error of a thread that could not. */
  handlersReady: Promise<void>;
  /**
   * Stops accepting, lets in-flight requests and handlers finish within `graceMs` (default:
   * SHUTDOWN_GRACE_MS), gives back unfinished leases, then closes the database.
   */
  close(graceMs?: number): Promise<void>;
}

/** Starts the receiver on `config.host:config.port` and resolves once it listens. */
export async function startServer(options: NodeRuntimeOptions): Promise<RunningServer> {
  const { config, logger } = options;
  await loadStoreBackend(config);
  const runtime = createNodeRuntime(options);
  const { server, stopTakingWork } = await listen(runtime, config);
  runtime.startBackground();
  // The threads load the registry while the server already takes deliveries (stored, run once they are up).
  const handlersReady = runtime.threads?.ready ?? Promise.resolve();
  handlersReady.catch(() => {}); // a caller that does not ask is told through /readyz and the log
  const { port } = server.address() as AddressInfo;
  const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  logger.info({ url, webhook_path: config.webhookPath, ...describeStore(config) }, 'listening');
  // On PostgreSQL the stored secrets are read once the store is reached, not holding up the start.
  const warned = runtime.storeReady.then(() => warnIfNoSecret(runtime, config, logger));
  if (config.databaseUrl === null) await warned;

  let closing: Promise<void> | undefined;
  return {
    url,
    port,
    runtime,
    handlersReady,
    close(graceMs = config.shutdownGraceMs) {
      closing ??= shutdown(server, stopTakingWork, runtime, config, logger, graceMs);
      return closing;
    },
  };
}

/** Without a signing secret every delivery is refused: say so at start, and how to fix it. */
async function warnIfNoSecret(runtime: NodeRuntime, config: Config, logger: Logger): Promise<void> {
  if (config.secrets.length > 0) return;
  const stored = await runtime.store.listSecrets().catch(() => []);
  if (stored.length > 0) return;
  logger.warn(
    {},
    'no signing secret configured: every delivery is answered 503 until one is set. Set SVC_WEBHOOK_SECRET ' +
      '(comma-separated to accept several), or store one with `podhook register --url <your url>` or ' +
      '`podhook secrets add < secret-file`; a stored secret is picked up without a restart',
  );
}

const CLOSING_BODY = JSON.stringify({ error: { code: 'unavailable', message: 'The receiver is shutting down; retry shortly.' } });

/**
 * The server with the limits an unauthenticated client meets: a connection cap (beyond it Node
 * closes new sockets at once), header, request and keep-alive time limits, checked often enough
 * to hold them. Once `stopTakingWork` runs, answers carry `connection: close` and a request
 * arriving on a kept-alive connection is refused with 503.
 */
function listen(runtime: NodeRuntime, config: Config): Promise<{ server: Server; stopTakingWork: () => void }> {
  const { maxConnections, headersTimeoutMs, requestTimeoutMs, keepAliveTimeoutMs } = config.limits;
  const listener = createNodeListener(runtime.app);
  const active = new Set<ServerResponse>();
  let closing = false;
  const server = createServer(
    {
      headersTimeout: Math.min(headersTimeoutMs, requestTimeoutMs),
      requestTimeout: requestTimeoutMs,
      keepAliveTimeout: keepAliveTimeoutMs,
      connectionsCheckingInterval: Math.max(25, Math.min(1000, Math.floor(Math.min(headersTimeoutMs, requestTimeoutMs) / 4))),
    },
    (req: IncomingMessage, res: ServerResponse) => {
      if (closing) {
        res.shouldKeepAlive = false;
        res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '5', connection: 'close' }).end(CLOSING_BODY);
        return;
      }
      active.add(res);
      res.once('close', () => active.delete(res));
      void listener(req, res);
    },
  );
  server.maxConnections = maxConnections;
  const stopTakingWork = () => {
    closing = true;
    for (const res of active) {
      res.shouldKeepAlive = false;
      if (!res.headersSent) res.setHeader('connection', 'close');
    }
  };
  return new Promise((resolve, reject) => {
    server.listen(config.port, config.host);
    server.once('listening', () => resolve({ server, stopTakingWork }));
    server.once('error', reject);
  });
}

/**
 * Stops taking work at once (no new connection, idle ones closed, every answer closes its
 * connection), answers each request already being read (bounded by the request time limit),
 * then gives the handlers `graceMs`.
 */
async function shutdown(server: Server, stopTakingWork: () => void, runtime: NodeRuntime, config: Config, logger: Logger, graceMs: number): Promise<void> {
  logger.info({ grace_ms: graceMs }, 'shutting down');
  stopTakingWork();
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  // A request still unanswered after the request time limit has already been timed out by Node.
  const timer = setTimeout(() => server.closeAllConnections(), config.limits.requestTimeoutMs + 1000);
  await closed;
  clearTimeout(timer);
  await runtime.close(graceMs);
  logger.info({}, 'stopped');
}
