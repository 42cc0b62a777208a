#!/usr/bin/env node
// `npm test`: the type check and the whole vitest suite, side by side instead of one after the
// other. The suite's processes leave part of both cores idle while they wait (a server starting, a
// lease running out), and the type check (`scripts/typecheck.mjs`, two tsc processes, run at a
// lower priority so the suite's timing is not starved) fills that time. The type check's output is
// printed when it ends; on a type error the suite is stopped and `npm test` fails at once, as it
// did when the check ran first. Arguments go to vitest (`npm test -- test/cli`). The exit code is
// the type check's when it failed, else vitest's.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
// vitest's own command (its package.json's bin), as `npx vitest` runs it.
const vitestPackage = createRequire(import.meta.url).resolve('vitest/package.json');
const vitestBin = join(dirname(vitestPackage), createRequire(import.meta.url)('vitest/package.json').bin.vitest);

const typecheck = spawn(process.execPath, [fileURLToPath(new URL('typecheck.mjs', import.meta.url)), '--nice'], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
let typecheckOutput = '';
typecheck.stdout.on('data', (c) => (typecheckOutput += c));
typecheck.stderr.on('data', (c) => (typecheckOutput += c));

const vitest = spawn(process.execPath, [vitestBin, 'run', ...process.argv.slice(2)], { cwd: root, stdio: 'inherit' });

// Ctrl-C reaches both through the terminal's process group; a plain SIGTERM to this process is passed on.
for (const signal of ['SIGTERM', 'SIGHUP']) {
  process.on(signal, () => {
    typecheck.kill(signal);
    vitest.kill(signal);
  });
}

const exited = (child) => new Promise((resolve) => {
  child.on('error', (error) => resolve({ code: 1, error }));
  child.on('close', (code, signal) => resolve({ code: code ?? (signal ? 1 : 0) }));
});

const vitestDone = exited(vitest);
const checked = await exited(typecheck);
process.stdout.write(typecheckOutput.endsWith('\n') || typecheckOutput === '' ? typecheckOutput : `${typecheckOutput}\n`);
if (checked.code !== 0) {
  process.stdout.write('npm test: the type check failed; the suite was stopped.\n');
  vitest.kill('SIGTERM');
  await vitestDone;
  process.exit(checked.code);
}
const ran = await vitestDone;
if (ran.error) process.stderr.write(`npm test: vitest did not start: ${ran.error.message}\n`);
process.exit(ran.code);
