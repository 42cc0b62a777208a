import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { signDelivery } from 'podhook/testing';
import { useTempDir } from '../helpers/temp-dir.js';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const tempDir = useTempDir('podhook-dev-');
const children: ChildProcess[] = [];
afterEach(async () => {
  for (const child of children.splice(0)) {
    if (child.exitCode !== null || child.signalCode !== null) continue;
    const exited = new Promise((r) => child.once('exit', r));
    process.kill(-child.pid!, 'SIGTERM'); // npm, tsx watch and the server: the whole group
    await exited;
  }
});

const handlerModule = (word: string) => `import { defineHandler } from 'podhook';

export default defineHandler('pod.created', async function hello(_event, { log }) {
  log.info({ word: '${word}' }, 'hello handler ran');
});
`;

/** A copy of the project as a team has it (src/, bin/, package.json, …) with its own handlers/. */
function projectCopy(): string {
  const dir = tempDir();
  for (const entry of ['src', 'bin', 'drizzle', 'package.json', 'tsconfig.json']) cpSync(join(REPO, entry), join(dir, entry), { recursive: true });
  symlinkSync(join(REPO, 'node_modules'), join(dir, 'node_modules'), 'dir');
  mkdirSync(join(dir, 'handlers'));
  writeFileSync(join(dir, 'handlers', 'index.ts'), "import hello from './hello.js';\n\nexport const handlers = [hello];\n");
  writeFileSync(join(dir, 'handlers', 'hello.ts'), handlerModule('first'));
  return dir;
}

describe('npm run dev', () => {
  it('restarts the receiver when a handler changes: the old process stops first, then the new code runs', async () => {
    const dir = projectCopy();
    const secret = 'whsec_dev_watch_test';
    const child = spawn('npm', ['run', 'dev', '--silent'], {
      cwd: dir,
      detached: true,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', HOST: '127.0.0.1', PORT: '0', DATABASE_PATH: join(dir, 'dev.db'), SVC_WEBHOOK_SECRET: secret },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let output = '';
    child.stdout!.on('data', (c) => (output += c));
    child.stderr!.on('data', (c) => (output += c));

    /** The URL of the n-th "listening" line (pino-pretty: `INFO: listening` then `url: "…"`). */
    const listening = (n: number) => [...output.matchAll(/INFO: listening\n(?: {4}.*\n)*? {4}url: "(http:[^"]+)"/g)][n - 1]?.[1];
    const deliver = async (url: string) => {
      const d = await signDelivery({ secret, type: 'pod.created' });
      const res = await fetch(`${url}/webhooks`, { method: 'POST', headers: d.headers, body: d.body });
      expect(res.status).toBe(200);
    };

    await expect.poll(() => listening(1), { timeout: 30_000, interval: 100 }).toBeDefined();
    await deliver(listening(1)!);
    await expect.poll(() => output, { timeout: 10_000, interval: 50 }).toMatch(/hello handler ran\n(?: {4}.*\n)*? {4}word: "first"/);

    writeFileSync(join(dir, 'handlers', 'hello.ts'), handlerModule('second'));
    await expect.poll(() => listening(2), { timeout: 30_000, interval: 100 }).toBeDefined();
    // Graceful: the old process received the signal and stopped before the new one listened.
    const restart = output.slice(output.indexOf('change in ./handlers/hello.ts'));
    expect(restart.indexOf('INFO: stopped')).toBeGreaterThan(restart.indexOf('INFO: signal received'));
    expect(restart.indexOf('INFO: listening')).toBeGreaterThan(restart.indexOf('INFO: stopped'));

    await deliver(listening(2)!);
    await expect.poll(() => output, { timeout: 10_000, interval: 50 }).toMatch(/hello handler ran\n(?: {4}.*\n)*? {4}word: "second"/);
  }, 90_000);
});
