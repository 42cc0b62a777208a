import pg from 'pg';
import { afterEach, describe, expect, inject, it, vi } from 'vitest';
import { WORK_CHANNEL } from '../../src/store/postgres/hot-statements.js';
import { startWorkListener } from '../../src/store/postgres/work-listener.js';
import { freshDatabaseUrl } from '../helpers/postgres.js';
import { freePort } from '../helpers/free-port.js';
import { openDoor } from '../helpers/tcp-door.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe('LISTEN podhook_work (idle replicas wake on new work)', () => {
  it('listens again after the connection drops and while the server stays unreachable, and wakes on work once it is back', async () => {
    const direct = await freshDatabaseUrl();
    const through = new URL(direct);
    through.port = String(await freePort());
    const serverPort = Number(new URL(inject('postgresAdminUrl')).port);
    let door = await openDoor(Number(through.port), serverPort);
    let wakes = 0;
    const errors: string[] = [];
    const listener = startWorkListener({
      connect: () => new pg.Client({ connectionString: through.href }),
      onWork: () => void wakes++,
      onError: (e) => void errors.push(e.message),
      retryMs: 50,
    });
    cleanups.push(() => listener.stop());
    await vi.waitFor(() => expect(wakes).toBe(1)); // listening: one wake for work committed before

    const notify = async () => {
      const c = new pg.Client({ connectionString: direct });
      await c.connect();
      await c.query(`select pg_notify('${WORK_CHANNEL}', '')`);
      await c.end();
    };
    await notify();
    await vi.waitFor(() => expect(wakes).toBe(2));

    // The connection drops and the server stays unreachable for several retries.
    await door.close();
    await vi.waitFor(() => expect(errors.filter((m) => /ECONNREFUSED/.test(m)).length).toBeGreaterThanOrEqual(2), { timeout: 5000 });
    door = await openDoor(Number(through.port), serverPort);
    cleanups.push(() => door.close());
    // Back: it listens again (a wake for work committed meanwhile), then wakes on new work.
    await vi.waitFor(() => expect(wakes).toBe(3), { timeout: 5000 });
    await notify();
    await vi.waitFor(() => expect(wakes).toBe(4));
  });
});
