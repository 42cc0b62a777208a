#!/usr/bin/env node
// `npm run typecheck`: tsc over tsconfig.json (Node, tests, handlers) and tsconfig.worker.json
// (the Worker's sources against the Workers runtime's globals), the two at once (tsc uses one
// core each). Each keeps its incremental state in node_modules/.cache/podhook-tsc/, so a second
// run checks only what changed since (tsc compares every file's content, node_modules' types
// included); a fresh clone checks everything. Each project's output is printed whole, in order;
// the exit code is non-zero when either found an error. `--nice`: at a lower priority (nice 10), as
// `npm test` runs it beside the suite (scripts/test.mjs).
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { setPriority } from 'node:os';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const cache = 'node_modules/.cache/podhook-tsc';
const projects = ['tsconfig.json', 'tsconfig.worker.json'];

// Before the tsc processes start: they inherit it.
if (process.argv.includes('--nice')) setPriority(10);

const started = performance.now();
const runs = projects.map(
  (project) =>
    new Promise((resolve) => {
      const name = project.replace(/\.json$/, '');
      const args = [tsc, '-p', project, '--noEmit', '--incremental', '--tsBuildInfoFile', `${cache}/${name}.tsbuildinfo`, '--pretty', String(Boolean(process.stdout.isTTY))];
      const child = spawn(process.execPath, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
      let output = '';
      child.stdout.on('data', (c) => (output += c));
      child.stderr.on('data', (c) => (output += c));
      child.on('error', (error) => resolve({ project, code: 1, output: String(error) }));
      child.on('close', (code) => resolve({ project, code: code ?? 1, output }));
    }),
);

const failed = [];
for (const run of runs) {
  const { project, code, output } = await run;
  if (output.trim() !== '') process.stdout.write(`tsc -p ${project}:\n${output}${output.endsWith('\n') ? '' : '\n'}`);
  if (code !== 0) failed.push(project);
}
const seconds = ((performance.now() - started) / 1000).toFixed(1);
process.stdout.write(`typecheck: ${failed.length > 0 ? `errors in ${failed.join(' and ')}` : `no errors in ${projects.join(' and ')}`} (${seconds} s)\n`);
process.exitCode = failed.length > 0 ? 1 : 0;
