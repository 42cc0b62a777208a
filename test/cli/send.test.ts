import { writeFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/core/observability/logger.js';
import { parseConfig } from '../../src/core/config.js';
import { startServer, type RunningServer } from '../../src/node/serve.js';
import { openNodeTarget } from '../helpers/node-target.js';
import { signDelivery, TEST_SECRET, toRequest } from '../helpers/sign.js';
import { dbIn, useTempDir } from '../helpers/temp-dir.js';
import { runMain } from './run-main.js';

const tempDir = useTempDir();
const servers: RunningServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close(100);
});

/** An export file of three captured deliveries (one body not UTF-8), and their ids. */
async function capture() {
  const target = openNodeTarget(tempDir(), { secrets: ['production-secret'] });
  const sent = [
    signDelivery({ secret: 'production-secret', t: Math.floor(Date.now() / 1000), eventType: 'pod.created' }),
    signDelivery({ secret: 'production-secret', t: Math.floor(Date.now() / 1000), eventType: 'pod.backup.failed', body: '{"n":1.50 }' }),
    signDelivery({ secret: 'production-secret', t: Math.floor(Date.now() / 1000), eventType: 'pod.expiring', body: new Uint8Array([0x7b, 0xff, 0x7d]) }),
  ];
  for (const d of sent) expect((await target.fetch(toRequest(d))).status).toBe(200);
  await target.close();
  const file = join(tempDir(), 'capture.jsonl');
  expect((await runMain(['export', '--out', file], { DATABASE_PATH: target.databasePath })).code).toBe(0);
  return { file, sent };
}

/** A receiver on 127.0.0.1 with its own database and secret, dispatch off. */
async function receiver() {
  const config = parseConfig({ DATABASE_PATH: dbIn(tempDir()), SVC_WEBHOOK_SECRET: TEST_SECRET, PORT: '0', HOST: '127.0.0.1', DISPATCHER: 'off' });
  const server = await startServer({ config, logger: silentLogger });
  servers.push(server);
  return { server, url: `${server.url}/webhooks` };
}

describe('podhook send', () => {
  it('re-signs captured deliveries with a fresh t: 200s with the same bytes, then duplicates on a second send', async () => {
    const { file, sent } = await capture();
    const { server, url } = await receiver();
    const before = Math.floor(Date.now() / 1000);

    const first = await runMain(['send', '--to', url, '--secret', TEST_SECRET, file], {});
    expect(first).toMatchObject({ code: 0, stdout: `Sent 3 deliveries to ${url}:\n  200 new  3\n`, stderr: '' });
    for (const d of sent) {
      const row = (await server.runtime.store.get(d.eventId))!;
      expect(row.eventType).toBe(d.eventType);
      expect(Buffer.from(row.body).equals(Buffer.from(d.body))).toBe(true);
      // The captured t is replaced by one taken at send time.
      expect(row.signatureT).toBeGreaterThanOrEqual(before);
    }

    const second = await runMain(['send', '--to', url, '--secret', TEST_SECRET, file], {});
    expect(second).toMatchObject({ code: 0, stdout: `Sent 3 deliveries to ${url}:\n  200 duplicate  3\n` });
    expect((await server.runtime.store.get(sent[0]!.eventId))!.deliveryCount).toBe(2);
  });

  it('reads stdin, signs with SVC_WEBHOOK_SECRET, and draws progress only on a terminal', async () => {
    const { file } = await capture();
    const { url } = await receiver();
    const input = readFileSync(file, 'utf8');

    const onTerminal = await runMain(['send', '--to', url, '--concurrency', '2', '-'], { SVC_WEBHOOK_SECRET: `${TEST_SECRET},other` }, { stdin: input, stderrIsTTY: true });
    expect(onTerminal.code).toBe(0);
    expect(onTerminal.stdout).toContain('200 new  3');
    expect(onTerminal.stderr).toMatch(/\r\[#{30}\] 3\/3\n$/);

    const piped = await runMain(['send', '--to', url, '-'], { SVC_WEBHOOK_SECRET: TEST_SECRET }, { stdin: input });
    expect(piped.stdout).toContain('200 duplicate  3');
    expect(piped.stderr).toBe('');
  });

  it('exits 1 and names the deliveries a receiver refused', async () => {
    const { file, sent } = await capture();
    const { url } = await receiver();
    const result = await runMain(['send', '--to', url, '--secret', 'not-the-receivers-secret', file], {});
    expect(result.code).toBe(1);
    expect(result.stdout).toBe(`Sent 3 deliveries to ${url}:\n  401 unauthorized  3\n`);
    for (const d of sent) expect(result.stderr).toContain(`${d.eventId}: 401 unauthorized`);
  });

  it('checks the whole file before sending anything, and refuses bad usage with exit 2', async () => {
    const { file } = await capture();
    const { server, url } = await receiver();
    const lines = readFileSync(file, 'utf8').split('\n');
    const broken = join(tempDir(), 'broken.jsonl');
    writeFileSync(broken, [lines[0], lines[1]!.replace('"format":"podhook.delivery.v1"', '"format":"podhook.delivery.v9"'), lines[2]].join('\n'));

    const result = await runMain(['send', '--to', url, '--secret', TEST_SECRET, broken], {});
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`${broken}, line 2: format: unsupported format "podhook.delivery.v9"`);
    expect(await server.runtime.store.list()).toEqual([]);

    const usage = [
      ['--secret', TEST_SECRET, file],
      ['--to', 'ftp://example.com', '--secret', TEST_SECRET, file],
      ['--to', url, '--secret', TEST_SECRET, '--concurrency', '0', file],
      ['--to', url, file], // no secret anywhere
    ];
    for (const args of usage) expect((await runMain(['send', ...args], { DATABASE_PATH: dbIn(tempDir()) })).code, args.join(' ')).toBe(2);
  });
});
