// The Cloudflare Worker entry (wrangler.toml `main`): the same core, HTTP app and handler modules
// as the Node service, on D1. Handlers are listed statically in handlers/index.ts so the bundler
// includes every one of them, with the payload module `podhook schemas` generated.
import * as registry from '../../handlers/index.js';
import { customizeApp } from '../app.js';
import { createWorker } from './create-worker.js';
import { workerRegistry } from './worker-registry.js';

export default createWorker({ ...workerRegistry(registry), customize: customizeApp });
