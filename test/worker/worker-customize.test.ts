import { describeCustomizeContract } from '../contract/customize-contract.js';
import { TEST_SECRET } from '../helpers/sign.js';
import { openWorkerTarget } from './worker-target.js';

describeCustomizeContract('Worker (D1, workerd)', (customize) =>
  openWorkerTarget({ secrets: [TEST_SECRET], maxBodyBytes: 4096 }, { customize }),
);
