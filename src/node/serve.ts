import type { AddressInfo } from 'node:net';
import { createServer, type Server } from 'node:http';
import type { Logger } from '../core/observability/logger.js';
import type { Config } from '../core/config.js';
import { createNodeListener } from './node-listener.js';
import { createNodeRuntime, type NodeRuntime, type NodeRuntimeOptions } from './node-runtime.js';

export interface RunningServer {
  url: string;
  port: number;
  runtime: NodeRuntime;
  /**
   * Stops accepting, lets in-flight requests and handlers finish within `graceMs` (default:
   * SHUTDOWN_GRACE_MS), gives back unfinished leases, then closes the database.
   */
  close(graceMs?: number): Promise<void>;
}

/** Starts the receiver on `config.host:config.port` and resolves once it listens. */
export async function startServer(options: NodeRuntimeOptions): Promise<RunningServer> {
  const { config, logger } = options;
  const runtime = createNodeRuntime(options);
  const server = await listen(runtime, config);
  runtime.startBackground();
  const { port } = server.address() as AddressInfo;
  const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  logger.info({ url, webhook_path: config.webhookPath, database: config.databasePath }, 'listening');
  await warnIfNoSecret(runtime, config, logger);

  let closing: Promise<void> | undefined;
  return {
    url,
    port,
    runtime,
    close(graceMs = config.shutdownGraceMs) {
      closing ??= shutdown(server, runtime, logger, graceMs);
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

function listen(runtime: NodeRuntime, config: Config): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer(createNodeListener(runtime.app));
    server.listen(config.port, config.host);
    server.once('listening', () => resolve(server));
    server.once('error', reject);
  });
}

async function shutdown(server: Server, runtime: NodeRuntime, logger: Logger, graceMs: number): Promise<void> {
  logger.info({ grace_ms: graceMs }, 'shutting down');
  const deadline = performance.now() + graceMs;
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  const timer = setTimeout(() => server.closeAllConnections(), graceMs);
  await closed;
  clearTimeout(timer);
  // One grace for the whole stop: handlers get what the open requests left of it.
  await runtime.close(Math.max(0, deadline - performance.now()));
  logger.info({}, 'stopped');
}
