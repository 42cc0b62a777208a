import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

export interface WranglerSecretPutOptions {
  name: string;
  value: string;
  env: Record<string, string | undefined>;
  /** The folder of the worker project (where wrangler.toml is). */
  cwd?: string;
  /** wrangler's own output (it never contains the value). */
  onOutput?: (text: string) => void;
}

/**
 * Runs `wrangler secret put <name>` and writes the value to its stdin, so it never appears in
 * an argument list (visible to every user in `ps`) or a log. The command is `$WRANGLER` when set
 * (split on spaces: `npx wrangler --env production`), else the project's
 * `node_modules/.bin/wrangler`, else `wrangler` on PATH.
 */
export function wranglerSecretPut({ name, value, env, cwd = process.cwd(), onOutput = () => {} }: WranglerSecretPutOptions): Promise<{ ok: true } | { ok: false; reason: string }> {
  const local = join(cwd, 'node_modules', '.bin', 'wrangler');
  const [command, ...prefix] = env.WRANGLER?.trim() ? env.WRANGLER.trim().split(/\s+/) : [existsSync(local) ? local : 'wrangler'];
  return new Promise((resolve) => {
    const child = spawn(command!, [...prefix, 'secret', 'put', name], {
      cwd,
      env: { ...env, WRANGLER_SEND_METRICS: 'false' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    child.stdout.on('data', (chunk: Buffer) => onOutput(String(chunk)));
    child.stderr.on('data', (chunk: Buffer) => onOutput(String(chunk)));
    child.once('error', (error: NodeJS.ErrnoException) =>
      resolve({ ok: false, reason: error.code === 'ENOENT' ? `${command} not found: install wrangler or set WRANGLER` : error.message }),
    );
    child.once('close', (code, signal) => resolve(code === 0 ? { ok: true } : { ok: false, reason: signal ? `killed by ${signal}` : `exit code ${code}` }));
    // An early exit closes the pipe; the exit code reports it.
    child.stdin.on('error', () => {});
    child.stdin.end(value);
  });
}
