// The Worker entry the workerd tests run: src/worker/index.ts's createWorker, with a fixture
// registry instead of the project's handlers/ (which belongs to the team using podhook).
import { createWorker } from '../../src/worker/create-worker.js';
import { handlers } from '../fixtures/recording-handlers.js';

export default createWorker({ handlers });
