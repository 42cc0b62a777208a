import { afterEach } from 'vitest';
import { parseConfig } from '../../src/core/config.js';
import { startServer, type RunningServer } from '../../src/node/serve.js';
import { captureLogger } from './capture-logger.js';
import { TEST_SECRET } from './sign.js';
import { dbIn } from './temp-dir.js';

/**
 * `podhook serve` in this process on 127.0.0.1 (a free port, dispatch off, TEST_SECRET, log
 * lines captured) with a fresh database in `dir()`; each server is closed after its test.
 */
export function useNodeServers(dir: () => string) {
  const servers: RunningServer[] = [];
  afterEach(async () => {
    for (const s of servers.splice(0)) await s.close(100);
  });
  return async function serve(env: Record<string, string> = {}) {
    const config = parseConfig({ DATABASE_PATH: dbIn(dir()), SVC_WEBHOOK_SECRET: TEST_SECRET, PORT: '0', HOST: '127.0.0.1', DISPATCHER: 'off', ...env });
    const log = captureLogger();
    const server = await startServer({ config, logger: log.logger });
    servers.push(server);
    return { server, log, path: config.databasePath, forget: () => servers.splice(servers.indexOf(server), 1) };
  };
}
