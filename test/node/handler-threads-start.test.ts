// Handler threads at start and in what they log (issue 47 §8): a registry that loads on the
// receiver's thread but not in a thread stops `podhook serve` with its error, instead of making
// every delivery's run fail; LOG_LEVEL holds for the lines handlers write in threads.
import { once } from 'node:events';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { parseConfig } from '../../src/core/config.js';
import { loadValidRegistry } from '../../src/node/handler-registry.js';
import { createNodeLogger } from '../../src/node/logger.js';
import { startServer, type RunningServer } from '../../src/node/serve.js';
import { MAIN_THREAD_ONLY_REGISTRY, PARITY_REGISTRY } from '../fixtures/registry-paths.js';
import { signDelivery, TEST_SECRET } from '../helpers/sign.js';
import { spawnServer, type ServerProcess } from '../helpers/spawn-podhook.js';
import { dbIn, useTempDir } from '../helpers/temp-dir.js';

const tempDir = useTempDir();
const spawned: ServerProcess[] = [];
const started: RunningServer[] = [];
afterEach(async () => {
  for (const s of spawned.splice(0)) s.child.kill('SIGKILL');
  for (const s of started.splice(0)) await s.close(500);
});

describe('handler threads at start', () => {
  it('a registry no thread can load stops podhook serve with exit 2 and its error; /readyz says so until then', async () => {
    const server = await spawnServer({ DATABASE_PATH: dbIn(tempDir()), SVC_WEBHOOK_SECRET: TEST_SECRET, HANDLER_THREADS: '1' }, { handlers: MAIN_THREAD_ONLY_REGISTRY });
    spawned.push(server);
    const exited = once(server.child, 'exit');
    // Asked as soon as it listens: the threads are still loading, or have failed to.
    const ready = await fetch(`${server.url}/readyz`).then((r) => r.json() as Promise<{ status: string }>).catch(() => null);
    if (ready) expect(ready.status).toBe('not_ready');
    const [code] = (await exited) as [number];
    expect(code).toBe(2);
    expect(server.output()).toContain('this registry cannot load in a worker thread');
  });
});

describe('LOG_LEVEL for the lines handlers write in threads', () => {
  for (const [level, expected] of [['warn', ['child line']], ['silent', []], ['fatal', []], ['trace', ['odd fields', 'message with ', 'child line']]] as const) {
    it(`LOG_LEVEL=${level}: ${expected.length === 0 ? 'none of them' : expected.join(', ')}`, async () => {
      const lines: string[] = [];
      const logger = createNodeLogger({ level, destination: new Writable({ write: (chunk, _e, cb) => (lines.push(String(chunk)), cb()) }) });
      const config = parseConfig({ DATABASE_PATH: dbIn(tempDir()), SVC_WEBHOOK_SECRET: TEST_SECRET, HANDLER_THREADS: '1', LOG_LEVEL: level, HOST: '127.0.0.1', PORT: '0', FIXTURE_SECRETS: 'x'.repeat(12) });
      const { handlers, payloads, module } = await loadValidRegistry(PARITY_REGISTRY);
      const server = await startServer({ config, logger, handlers, payloads, handlersModule: module });
      started.push(server);
      const d = signDelivery({ t: Math.floor(Date.now() / 1000), eventType: 'pod.status.changed', body: { n: level } });
      expect((await fetch(`${server.url}/webhooks`, { method: 'POST', headers: d.headers, body: d.body })).status).toBe(200);
      await vi.waitFor(async () => expect((await server.runtime.store.get(d.eventId))?.status).toBe('processed'), { timeout: 15_000, interval: 50 });
      const said = lines.filter((l) => l.includes(d.eventId) && l.includes('"handler":"odd"') && !l.includes('handler run')).map((l) => (JSON.parse(l) as { msg: string }).msg);
      expect(said).toEqual(expected);
    });
  }
});
