import { Readable } from 'node:stream';
import { main } from '../../src/cli/main.js';
import type { CliResult } from '../helpers/spawn-podhook.js';

export interface RunMainOptions {
  stdin?: string;
  stderrIsTTY?: boolean;
  /** Replaces real waits (a rate limit's retry). */
  sleep?: (ms: number) => Promise<void>;
}

/** Runs `podhook <argv>` in this process (the real `main`), with only the given environment. */
export async function runMain(argv: string[], env: Record<string, string>, { stdin = '', stderrIsTTY = false, sleep }: RunMainOptions = {}): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  const code = await main(argv, {
    stdout: (t) => void (stdout += t),
    stderr: (t) => void (stderr += t),
    env,
    stdin: Readable.from(stdin === '' ? [] : [stdin]),
    stderrIsTTY,
    sleep,
  });
  return { code, stdout, stderr };
}
