// `podhook listen` following the Worker in workerd (`wrangler dev --local`, spawned, offline),
// which answers an export at once: listen polls it every WORKER_POLL_MS.
import { startWorkerRemote } from '../helpers/remote-podhook.js';
import { describeListenScenario } from './listen-scenario.js';

describeListenScenario('the Worker under wrangler dev --local', startWorkerRemote);
