import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createNodeListener } from '../../src/node/node-listener.js';
import type { HttpTarget, HttpTargetOptions } from '../contract/http-contract.js';
import { parseConfig } from '../../src/core/config.js';
import { createNodeRuntime, type NodeRuntime } from '../../src/node/node-runtime.js';
import type { Logger } from '../../src/core/observability/logger.js';
import type { HandlerDefinition } from '../../src/core/events/define-handler.js';
import type { PodhookApp } from '../../src/http/create-app.js';
import { silentLogger } from '../../src/core/observability/logger.js';
import { dbIn } from './temp-dir.js';

export interface NodeTarget extends HttpTarget {
  runtime: NodeRuntime;
  databasePath: string;
}

export interface NodeTargetExtras {
  logger?: Logger;
  busyTimeoutMs?: number;
  handlers?: readonly HandlerDefinition[];
  customize?: (app: PodhookApp) => void;
}

/** The Node runtime on a real SQLite file, driven in-process through `app.request`. */
export function openNodeTarget(
  dir: string,
  { secrets, maxBodyBytes }: HttpTargetOptions,
  { logger = silentLogger, busyTimeoutMs, handlers, customize }: NodeTargetExtras = {},
): NodeTarget {
  let now = Date.now();
  const databasePath = dbIn(dir);
  const config = parseConfig({
    DATABASE_PATH: databasePath,
    SVC_WEBHOOK_SECRET: secrets.join(','),
    MAX_BODY_BYTES: maxBodyBytes ? String(maxBodyBytes) : undefined,
    // Tests drive dispatch explicitly (runtime.dispatcher.runUntilIdle()), so rows stay as ingest left them.
    DISPATCHER: 'off',
  });
  const runtime = createNodeRuntime({ config, logger, clock: () => now, busyTimeoutMs, handlers, customize });
  return {
    runtime,
    databasePath,
    store: runtime.store,
    fetch: async (request) => runtime.app.request(request),
    setNow: (ms) => {
      now = ms;
    },
    close: () => runtime.close(),
  };
}

/**
 * The same runtime behind a real `node:http` server on 127.0.0.1 with the production listener
 * (the Hono app over @hono/node-server, ingest reading Node's own request): requests travel over TCP.
 */
export async function openNodeHttpTarget(
  dir: string,
  options: HttpTargetOptions,
  extra: NodeTargetExtras = {},
): Promise<NodeTarget> {
  const target = openNodeTarget(dir, options, extra);
  const { runtime } = target;
  const server = createServer(createNodeListener(runtime.app));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    ...target,
    async fetch(request) {
      const { pathname, search } = new URL(request.url);
      const body = request.method === 'GET' || request.method === 'HEAD' ? undefined : new Uint8Array(await request.arrayBuffer());
      return fetch(`${origin}${pathname}${search}`, { method: request.method, headers: request.headers, body });
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await target.close();
    },
  };
}
