import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { RECORDING_REGISTRY } from '../fixtures/registry-paths.js';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const BIN = fileURLToPath(new URL('../../bin/podhook.js', import.meta.url));

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
  const child = spawn(process.execPath, [BIN, ...args], {
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

/**
 * Starts `podhook serve` in a child process and waits for its "listening" line. It serves a
 * fixture registry (`--handlers`), never the project's handlers/.
 */
export async function spawnServer(env: Record<string, string>, { handlers = RECORDING_REGISTRY, command }: SpawnOptions = {}): Promise<ServerProcess> {
  const [file, ...args] = command ? command.map((part, i) => (i === 0 && part === 'node' ? process.execPath : part)) : [process.execPath, BIN, 'serve'];
  const child = spawn(file!, [...args, '--handlers', handlers], {
    cwd: REPO_ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', HOST: '127.0.0.1', PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${output}`)), 15_000);
    const onData = (chunk: Buffer) => {
      output += chunk;
      const match = /"url":"(http:\/\/[^"]+)".*"msg":"listening"/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`server exited with ${code}:\n${output}`)));
  });
  return { child, url, output: () => output };
}
