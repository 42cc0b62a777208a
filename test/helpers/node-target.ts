import type { HttpTarget, HttpTargetOptions } from '../contract/http-contract.js';
import { parseConfig } from '../../src/core/config.js';
import { createNodeRuntime, type NodeRuntime } from '../../src/node/node-runtime.js';
import type { Logger } from '../../src/core/logger.js';
import type { HandlerDefinition } from '../../src/core/define-handler.js';
import { silentLogger } from '../../src/core/logger.js';
import { dbIn } from './temp-dir.js';

export interface NodeTarget extends HttpTarget {
  runtime: NodeRuntime;
  databasePath: string;
}

/** The Node runtime on a real SQLite file, driven in-process through `app.request`. */
export function openNodeTarget(
  dir: string,
  { secrets, maxBodyBytes }: HttpTargetOptions,
  { logger = silentLogger, busyTimeoutMs, handlers }: { logger?: Logger; busyTimeoutMs?: number; handlers?: readonly HandlerDefinition[] } = {},
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
  const runtime = createNodeRuntime({ config, logger, clock: () => now, busyTimeoutMs, handlers });
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
