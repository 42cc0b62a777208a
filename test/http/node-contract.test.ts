import { describeHttpContract } from '../contract/http-contract.js';
import { openNodeHttpTarget, openNodeTarget } from '../helpers/node-target.js';
import { useTempDir } from '../helpers/temp-dir.js';

const tempDir = useTempDir();

describeHttpContract('Node (better-sqlite3)', async (options) => openNodeTarget(tempDir(), options));
describeHttpContract('Node over node:http (the served listener)', async (options) => openNodeHttpTarget(tempDir(), options));
