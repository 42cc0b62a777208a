import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, inject } from 'vitest';
import { RECORDING_REGISTRY } from '../fixtures/registry-paths.js';
import { builtArgument, namesTypeScript, REPO_ROOT, type PodhookBuild } from './podhook-build.js';

export { REPO_ROOT };
/** The checkout's `podhook` command (bin/podhook.js), which runs the sources through tsx. */
export const BIN = fileURLToPath(new URL('../../bin/podhook.js', import.meta.url));

/** The run's build (test/build/podhook-build.global.ts), if this run made one. */
export function runBuild(): PodhookBuild | null {
  try {
    return inject('podhookBuild') ?? null;
  } catch {
    return null; // not inside a vitest test file
  }
}

/**
 * A command line that runs `podhook` (`node bin/podhook.js …`, or any line naming BIN), as the
 * run starts it: from the run's build of the current sources, with each argument naming a
 * module the build compiled (`--handlers test/fixtures/x.ts`) pointed at its compiled file.
 * Where an argument names a TypeScript file the build does not hold (one a test wrote), or the
 * run made no build (PODHOOK_TEST_FROM_SOURCE=1), the line is left as it is: bin/podhook.js
 * then runs the sources through tsx. `cwd` is where relative paths are resolved from.
 */
export function podhookCommand(command: string[], cwd = process.cwd()): string[] {
  const build = runBuild();
  const at = command.findIndex((part) => resolve(cwd, part) === BIN);
  if (!build || at < 0) return command;
  const args = command.slice(at + 1).map((arg) => builtArgument(build, arg, cwd));
  if (args.some((arg) => namesTypeScript(arg, cwd))) return command;
  return [...command.slice(0, at), build.bin, ...args];
}

/**
 * `node`'s arguments to run a TypeScript script of the repository (`test/fixtures/x.ts`): its
 * compiled file in the run's build, or the source through tsx when the run made no build.
 */
export function nodeScriptArgs(script: string, cwd = process.cwd()): string[] {
  const build = runBuild();
  const compiled = build ? builtArgument(build, script, cwd) : script;
  return compiled === script ? ['--import', 'tsx', script] : [compiled];
}

/** `[script, ...args]` for `node` to run `podhook <args>` (see podhookCommand). */
export const podhookArgs = (args: string[], cwd = process.cwd()): string[] => podhookCommand([BIN, ...args], cwd);

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `podhook <args>` as a user would (the package bin), with only the given environment. With
 * `timeoutMs`, a command still running then is killed (its code is null): for what must not hang.
 */
export async function runCli(args: string[], env: Record<string, string> = {}, input?: string, timeoutMs?: number): Promise<CliResult> {
  const child = spawn(process.execPath, podhookArgs(args), {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c) => (stdout += c));
  child.stderr.on('data', (c) => (stderr += c));
  child.stdin.end(input ?? '');
  const timer = timeoutMs === undefined ? undefined : setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const [code] = (await once(child, 'close')) as [number | null];
  clearTimeout(timer);
  return { code, stdout, stderr };
}

export interface ServerProcess {
  child: ChildProcess;
  url: string;
  output: () => string;
}

export interface SpawnOptions {
  handlers?: string;
  /**
   * The command line as a deployment writes it (`node bin/podhook.js serve`, deploy/compose.yaml):
   * `node` is this Node, and paths are relative to the repository root.
   */
  command?: string[];
}

/** Servers this test file started and that are still running: killed once its tests are done. */
const started = new Set<ChildProcess>();
afterAll(() => {
  for (const child of started) child.kill('SIGKILL');
});

/**
 * Starts `podhook serve` in a child process and waits for its "listening" line. It serves a
 * fixture registry (`--handlers`), never the project's handlers/. A server that does not start
 * within 15 s is killed; one a failed test left running is killed after the file's last test.
 */
export async function spawnServer(env: Record<string, string>, { handlers = RECORDING_REGISTRY, command }: SpawnOptions = {}): Promise<ServerProcess> {
  const line = command ? command.map((part, i) => (i === 0 && part === 'node' ? process.execPath : part)) : [process.execPath, BIN, 'serve'];
  const [file, ...args] = podhookCommand([...line, '--handlers', handlers], REPO_ROOT);
  const child = spawn(file!, args, {
    cwd: REPO_ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', HOST: '127.0.0.1', PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  started.add(child);
  child.once('exit', () => started.delete(child));
  let output = '';
  let listening = false;
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`server did not start:\n${output}`));
    }, 15_000);
    const onData = (chunk: Buffer) => {
      output += chunk;
      if (listening) return;
      const match = /"url":"(http:\/\/[^"]+)".*"msg":"listening"/.exec(output);
      if (match) {
        listening = true;
        clearTimeout(timer);
        resolve(match[1]!);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code}:\n${output}`));
    });
  });
  return { child, url, output: () => output };
}
