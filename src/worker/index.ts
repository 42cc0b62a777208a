// The Cloudflare Worker entry (wrangler.toml `main`): the same core, HTTP app and handler modules
// as the Node service, on D1. Handlers are listed statically in handlers/index.ts so the bundler
// includes every one of them.
import { handlers } from '../../handlers/index.js';
import { customizeApp } from '../app.js';
import { createWorker } from './create-worker.js';

export default createWorker({ handlers, customize: customizeApp });
