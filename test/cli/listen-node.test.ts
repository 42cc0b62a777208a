// `podhook listen` following a real Node `podhook serve` (spawned, ADMIN_TOKEN set).
import { startNodeRemote } from '../helpers/remote-podhook.js';
import { describeListenScenario } from './listen-scenario.js';

describeListenScenario('a Node podhook serve', startNodeRemote);
