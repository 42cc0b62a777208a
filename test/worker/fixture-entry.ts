// The Worker entry the workerd tests run: src/worker/index.ts's createWorker and registry reading,
// with a fixture registry instead of the project's handlers/ (which belongs to the team using podhook).
import { createWorker } from '../../src/worker/create-worker.js';
import { workerRegistry } from '../../src/worker/worker-registry.js';
import * as registry from '../fixtures/recording-handlers.js';

export default createWorker(workerRegistry(registry, 'test/fixtures/recording-handlers.ts'));
