import { describeHttpContract } from '../contract/http-contract.js';
import { openWorkerTarget } from './worker-target.js';

describeHttpContract('Worker (D1, workerd)', (options) => openWorkerTarget(options));
