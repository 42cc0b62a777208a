import { describeCustomizeContract } from '../contract/customize-contract.js';
import { openNodeHttpTarget } from '../helpers/node-target.js';
import { TEST_SECRET } from '../helpers/sign.js';
import { useTempDir } from '../helpers/temp-dir.js';

const tempDir = useTempDir();

// Over TCP on 127.0.0.1, through the production listener (@hono/node-server).
describeCustomizeContract('Node over node:http', (customize) =>
  openNodeHttpTarget(tempDir(), { secrets: [TEST_SECRET], maxBodyBytes: 4096 }, { customize }),
);
