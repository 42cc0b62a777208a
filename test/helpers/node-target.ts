import type { HttpTarget, HttpTargetOptions } from '../contract/http-contract.js';
import { parseConfig } from '../../src/node/config.js';
import { createNodeRuntime, type NodeRuntime } from '../../src/node/node-runtime.js';
import type { Logger } from '../../src/core/logger.js';
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
  { logger = silentLogger, busyTimeoutMs }: { logger?: Logger; busyTimeoutMs?: number } = {},
): NodeTarget {
  let now = Date.now();
  const databasePath = dbIn(dir);
  const config = parseConfig({
    DATABASE_PATH: databasePath,
    SVC_WEBHOOK_SECRET: secrets.join(','),
    MAX_BODY_BYTES: maxBodyBytes ? String(maxBodyBytes) : undefined,
  });
  const runtime = createNodeRuntime({ config, logger, clock: () => now, busyTimeoutMs });
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
