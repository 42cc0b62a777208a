import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { defineHandler } from '../../src/index.js';
import { parseConfig } from '../../src/core/config.js';
import { startServer, type RunningServer } from '../../src/node/serve.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { captureLogger } from '../helpers/capture-logger.js';
import { signDelivery, TEST_SECRET } from '../helpers/sign.js';
import { spawnServer } from '../helpers/spawn-podhook.js';
import { dbIn, useTempDir } from '../helpers/temp-dir.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const tempDir = useTempDir();
const servers: RunningServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close(100);
});
const nowS = () => Math.floor(Date.now() / 1000);
const NO_SECRET = /no signing secret configured: every delivery is answered 503 until one is set\. Set SVC_WEBHOOK_SECRET/;

/** Whether nothing listens on the port any more (binding it succeeds). */
const portIsFree = (port: number) =>
  new Promise<boolean>((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });

describe('SHUTDOWN_GRACE_MS', () => {
  it('bounds how long a stop waits for running handlers, then aborts them and gives the delivery back', async () => {
    let started = false;
    const stuck = defineHandler('pod.created', { name: 'stuck' }, async () => {
      started = true;
      await new Promise(() => {}); // never settles: only the shutdown's abort ends it
    });
    const path = dbIn(tempDir());
    const config = parseConfig({ DATABASE_PATH: path, SVC_WEBHOOK_SECRET: TEST_SECRET, PORT: '0', HOST: '127.0.0.1', SHUTDOWN_GRACE_MS: '200' });
    const log = captureLogger();
    const server = await startServer({ config, logger: log.logger, handlers: [stuck] });
    const d = signDelivery({ t: nowS() });
    expect((await fetch(`${server.url}/webhooks`, { method: 'POST', headers: d.headers, body: d.body })).status).toBe(200);
    await vi.waitFor(() => expect(started, 'handler started').toBe(true), { timeout: 5000 });

    await server.close(); // no argument: the configured grace
    const records = log.records();
    expect(records.find((r) => r.msg === 'shutting down')).toMatchObject({ grace_ms: 200 });
    expect(records.some((r) => r.msg === 'handlers still running at shutdown: aborting them')).toBe(true);
    expect(records.at(-1)?.msg).toBe('stopped');
    const { store, close } = openSqliteStore(path);
    expect((await store.get(d.eventId))!.status).not.toBe('processed');
    close();
  });

  it('is 10 s unless set', async () => {
    const config = parseConfig({ DATABASE_PATH: dbIn(tempDir()), SVC_WEBHOOK_SECRET: TEST_SECRET, PORT: '0', HOST: '127.0.0.1' });
    const log = captureLogger();
    const server = await startServer({ config, logger: log.logger });
    await server.close();
    expect(log.records().find((r) => r.msg === 'shutting down')).toMatchObject({ grace_ms: 10_000 });
  });
});

describe('start-up warning without a signing secret', () => {
  it('warns that deliveries get 503 until a secret is set, and how to set one', async () => {
    const log = captureLogger();
    const config = parseConfig({ DATABASE_PATH: dbIn(tempDir()), PORT: '0', HOST: '127.0.0.1' });
    servers.push(await startServer({ config, logger: log.logger }));
    const warning = log.records().find((r) => r.level === 40 && NO_SECRET.test(String(r.msg)));
    expect(warning?.msg).toMatch(/podhook register --url/);
    expect(warning?.msg).toMatch(/podhook secrets add/);
  });

  it('says nothing of the kind with a secret, and never logs the secret', async () => {
    const secret = 'whsec_lifecycle_7c1e9a2b44d0';
    const server = await spawnServer({ DATABASE_PATH: dbIn(tempDir()), SVC_WEBHOOK_SECRET: secret });
    const d = signDelivery({ t: nowS(), secret });
    expect((await fetch(`${server.url}/webhooks`, { method: 'POST', headers: d.headers, body: d.body })).status).toBe(200);
    server.child.kill('SIGTERM');
    await once(server.child, 'close');
    expect(server.output()).toMatch(/"msg":"stopped"/);
    expect(server.output()).not.toMatch(NO_SECRET);
    expect(server.output()).not.toContain(secret);
  });
});

describe('npm start', () => {
  it('stops gracefully when SIGTERM is sent to the npm process, and frees the port', { timeout: 180_000 }, async () => {
    const child = spawn('npm', ['start', '--silent'], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', HOST: '127.0.0.1', PORT: '0', DATABASE_PATH: dbIn(tempDir()) },
      stdio: ['ignore', 'pipe', 'pipe'],
      // Its own process group: whatever npm started can be cleaned up if the test fails.
      detached: true,
    });
    let output = '';
    child.stdout.on('data', (c) => (output += c));
    child.stderr.on('data', (c) => (output += c));
    const closed = once(child, 'close');
    try {
      await vi.waitFor(() => expect(output, 'npm start listening').toMatch(/"msg":"listening"/), { timeout: 150_000, interval: 100 });
      const port = Number(/"url":"http:\/\/127\.0\.0\.1:(\d+)"/.exec(output)![1]);
      // Without a secret the start-up warning is there too.
      expect(output).toMatch(NO_SECRET);
      expect(await portIsFree(port)).toBe(false);

      child.kill('SIGTERM'); // npm's own pid, as a process manager or Ctrl-C would signal it
      const [code] = await Promise.race([closed, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`npm did not exit:\n${output}`)), 20_000))]);
      expect(output).toMatch(/"signal":"SIGTERM","msg":"signal received"/);
      expect(output).toMatch(/"msg":"stopped"/);
      expect(code).toBe(0);
      expect(await portIsFree(port)).toBe(true);
    } finally {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // the group is gone: everything stopped
      }
    }
  });
});
