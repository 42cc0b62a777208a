import type { AddressInfo } from 'node:net';
import { createServer, type Server } from 'node:http';
import type { Logger } from '../core/observability/logger.js';
import { describeStore, type Config } from '../core/config.js';
import { createNodeListener } from './node-listener.js';
import { createNodeRuntime, type NodeRuntime, type NodeRuntimeOptions } from './node-runtime.js';

export interface RunningServer {
  url: string;
  port: number;
  runtime: NodeRuntime;
  /**
   * Stops accepting, lets in-flight requests and handlers finish within `graceMs`, gives back
   * unfinished leases, then closes the database.
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
  logger.info({ url, webhook_path: config.webhookPath, ...describeStore(config) }, 'listening');

  let closing: Promise<void> | undefined;
  return {
    url,
    port,
    runtime,
    close(graceMs = 5000) {
      closing ??= shutdown(server, runtime, logger, graceMs);
      return closing;
    },
  };
}

function listen(runtime: NodeRuntime, config: Config): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer(createNodeListener({ fetch: runtime.app.fetch, ingest: runtime.ingest, webhookPath: config.webhookPath }));
    server.listen(config.port, config.host);
    server.once('listening', () => resolve(server));
    server.once('error', reject);
  });
}

async function shutdown(server: Server, runtime: NodeRuntime, logger: Logger, graceMs: number): Promise<void> {
  logger.info({ grace_ms: graceMs }, 'shutting down');
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  const timer = setTimeout(() => server.closeAllConnections(), graceMs);
  await closed;
  clearTimeout(timer);
  await runtime.close(graceMs);
  logger.info({}, 'stopped');
}
