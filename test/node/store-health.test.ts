import { unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { signDelivery, TEST_SECRET } from '../helpers/sign.js';
import { spawnSync } from 'node:child_process';
import { podhookArgs } from '../helpers/spawn-podhook.js';
import { useNodeServers } from '../helpers/serve-node.js';
import { useTempDir } from '../helpers/temp-dir.js';

const tempDir = useTempDir();
const serve = useNodeServers(tempDir);

const deliver = (url: string) => {
  const d = signDelivery({ t: Math.floor(Date.now() / 1000) });
  return fetch(`${url}/webhooks`, { method: 'POST', headers: d.headers, body: d.body });
};
const readyz = (url: string) => fetch(`${url}/readyz`).then(async (r) => ({ status: r.status, body: (await r.json()) as { checks: Record<string, string> } }));

describe('the store notices when it is gone or failing', () => {
  it.each([
    ['the database file', ''],
    ['its -wal file', '-wal'],
  ])('deleting %s: 503 + Retry-After, /readyz 503, one error line', async (_name, suffix) => {
    const { server, log, path } = await serve();
    expect((await deliver(server.url)).status).toBe(200);
    unlinkSync(`${path}${suffix}`);
    // Before acknowledging, or within a second by the periodic check: never a 200 once gone.
    const res = await deliver(server.url);
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
    await vi.waitFor(async () => expect((await readyz(server.url)).status).toBe(503), { timeout: 5000 });
    expect((await readyz(server.url)).body.checks.store).toMatch(/deleted|replaced/);
    expect((await deliver(server.url)).status).toBe(503);
    const errors = log.records().filter((r) => (r.level as number) >= 50);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ msg: 'database file gone' });
  });

  it('notices a deleted file within a second with no delivery arriving', async () => {
    const { server, log, path } = await serve();
    expect((await readyz(server.url)).status).toBe(200);
    unlinkSync(path);
    await vi.waitFor(async () => expect(await (() => log.records().some((r) => r.msg === 'database file gone'))()).toBe(true), { timeout: 5000 });
    expect((await readyz(server.url)).status).toBe(503);
  });

  it('/readyz answers 503 while commits fail (database full) and ready again after one succeeds', async () => {
    const { server, log } = await serve();
    const sqlite = server.runtime.database!.sqlite;
    expect((await deliver(server.url)).status).toBe(200);
    const pages = sqlite.pragma('page_count', { simple: true }) as number;
    sqlite.pragma(`max_page_count = ${pages}`); // a real SQLITE_FULL on the next commit that grows the file
    const big = signDelivery({ t: Math.floor(Date.now() / 1000), body: { pad: 'x'.repeat(60_000) } });
    const failed = await fetch(`${server.url}/webhooks`, { method: 'POST', headers: big.headers, body: big.body });
    expect(failed.status).toBe(503);
    const down = await readyz(server.url);
    expect(down.status).toBe(503);
    expect(down.body.checks.store).toMatch(/^commits failing/);
    sqlite.pragma('max_page_count = 1073741823');
    expect((await deliver(server.url)).status).toBe(200);
    expect((await readyz(server.url)).status).toBe(200);
    expect(log.text()).not.toContain('x'.repeat(100));
  });

  it.each([
    ['under /proc', () => '/proc/nope/x.db'],
    ['whose parent is a file', (dir: string) => (writeFileSync(join(dir, 'file'), ''), join(dir, 'file', 'x.db'))],
    ['that is a directory', (dir: string) => dir],
  ])('a DATABASE_PATH %s is a clear error and exit 2', async (_name, pathIn) => {
    const path = pathIn(tempDir());
    // Killed after 10 s if it hangs, so a regression fails instead of leaving a spinning process.
    const result = spawnSync(process.execPath, podhookArgs(['serve']), {
      env: { PATH: process.env.PATH ?? '', DATABASE_PATH: path, SVC_WEBHOOK_SECRET: TEST_SECRET, PORT: '0', HOST: '127.0.0.1' },
      encoding: 'utf8',
      timeout: 10_000,
      killSignal: 'SIGKILL',
    });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain(`DATABASE_PATH ${path}`);
  }, 20_000);
});
