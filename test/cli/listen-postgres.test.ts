// `podhook listen` following a Node `podhook serve` on PostgreSQL (DATABASE_URL): its admin
// export read from PostgreSQL, stored here in a local SQLite file.
import { freshDatabaseUrl } from '../helpers/postgres.js';
import { startNodeRemote } from '../helpers/remote-podhook.js';
import { describeListenScenario } from './listen-scenario.js';

describeListenScenario('a Node podhook serve on PostgreSQL', async (dir, seed) => startNodeRemote(dir, seed, await freshDatabaseUrl()));
