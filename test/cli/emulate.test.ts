import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, expect, it, vi } from 'vitest';
import { handlers } from '../fixtures/recording-handlers.js';
import type { DeliveryRecord } from '../../src/emulator/delivery-scheduler.js';
import { parseConfig } from '../../src/core/config.js';
import { startServer } from '../../src/node/serve.js';
import { captureLogger } from '../helpers/capture-logger.js';
import { podhookArgs, runCli } from '../helpers/spawn-podhook.js';
import { dbIn, useTempDir } from '../helpers/temp-dir.js';
import { runMain } from './run-main.js';

const tempDir = useTempDir();
const KEY = 'emu_key_for_the_process_test';

/** Starts `podhook emulate` as a user would and waits for the line with its address. */
async function spawnEmulate(args: string[]) {
  const child = spawn(process.execPath, podhookArgs(['emulate', ...args]), {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c) => (stdout += c));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`emulate did not start:\n${stderr}`)), 15_000);
    child.stderr.on('data', (c) => {
      stderr += c;
      const match = /listens on (http:\/\/\S+)/.exec(stderr);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    });
    child.once('exit', (code) => reject(new Error(`emulate exited with ${code}:\n${stderr}`)));
  });
  return { child, url, stdout: () => stdout, stderr: () => stderr };
}

describe('podhook emulate', () => {
  it('serves the stand-in: register with the CLI, emit an event, the receiver processes it, SIGTERM exits 0', async () => {
    // --allow-local-urls, the old spelling, is an alias of --allow-local-url.
    const emulate = await spawnEmulate(['--port', '0', '--api-key', KEY, '--allow-local-urls', '--time-scale', '0.001']);
    expect(emulate.stderr()).toContain('npx podhook register --url <url> --allow-local-url\n');
    const db = dbIn(tempDir());
    const receiver = await startServer({
      config: parseConfig({ DATABASE_PATH: db, PORT: '0', HOST: '127.0.0.1' }),
      logger: captureLogger().logger,
      handlers,
    });
    try {
      const registered = await runCli(['register', '--allow-local-url', '--url', `${receiver.url}/webhooks`, '--events', 'pod.renewed'], {
        SVC_API_KEY: KEY,
        SVC_BASE_URL: emulate.url,
        DATABASE_PATH: db,
      });
      expect(registered.code).toBe(0);

      const emitted = await fetch(`${emulate.url}/_emulator/events`, { method: 'POST', body: JSON.stringify({ type: 'pod.renewed' }) });
      expect(emitted.status).toBe(202);
      const { event } = (await emitted.json()) as { event: { id: string } };
      await vi.waitFor(async () => expect((await receiver.runtime.store.get(event.id))?.status === 'processed', 'processed').toBe(true), { timeout: 10_000 });
      const { deliveries } = (await (await fetch(`${emulate.url}/_emulator/deliveries`)).json()) as { deliveries: DeliveryRecord[] };
      expect(deliveries).toMatchObject([{ event_id: event.id, event_type: 'pod.renewed', status: 'delivered', attempts: [{ attempt: 1, status: 200 }] }]);

      const secret = (await receiver.runtime.store.listSecrets())[0]!.secret;
      // pino writes asynchronously: the line may follow the answer by a moment.
      await vi.waitFor(() => expect(emulate.stdout().includes('"outcome":"delivered"'), 'delivery logged').toBe(true), { timeout: 5000 });
      expect(emulate.stdout()).toContain('"msg":"webhook created"');
      expect(emulate.stdout() + emulate.stderr() + registered.stdout + registered.stderr).not.toContain(secret);
    } finally {
      await receiver.close(100);
      emulate.child.kill('SIGTERM');
    }
    const [code] = await once(emulate.child, 'exit');
    expect(code).toBe(0);
  });

  it('refuses a bad --time-scale or --port with exit 2', async () => {
    expect((await runMain(['emulate', '--time-scale', '0'], {})).code).toBe(2);
    expect((await runMain(['emulate', '--time-scale', 'fast'], {})).code).toBe(2);
    const port = await runMain(['emulate', '--port', '70000'], {});
    expect(port.code).toBe(2);
    expect(port.stderr).toContain('--port must be a whole number from 0 to 65535');
  });
});
