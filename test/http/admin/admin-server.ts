import { parseConfig } from '../../../src/core/config.js';
import type { Logger } from '../../../src/core/observability/logger.js';
import { startServer, type RunningServer } from '../../../src/node/serve.js';
import type { NodeRuntimeOptions } from '../../../src/node/node-runtime.js';
import { handlers } from '../../fixtures/recording-handlers.js';
import { TEST_SECRET } from '../../helpers/sign.js';
import { dbIn } from '../../helpers/temp-dir.js';

/**
 * `podhook serve` in-process on 127.0.0.1 with the recording fixture handlers, the admin token
 * set, and one dispatch attempt (a failing handler makes a dead letter at once).
 */
export function startAdminServer(
  dir: string,
  { token, logger, admin, payloads }: { token: string; logger: Logger; admin?: NodeRuntimeOptions['admin']; payloads?: NodeRuntimeOptions['payloads'] },
): Promise<RunningServer> {
  const config = parseConfig({
    DATABASE_PATH: dbIn(dir),
    SVC_WEBHOOK_SECRET: TEST_SECRET,
    PORT: '0',
    HOST: '127.0.0.1',
    DISPATCH_MAX_ATTEMPTS: '1',
    ADMIN_TOKEN: token,
  });
  return startServer({ config, logger, handlers, admin, payloads });
}
