import { resolveSigningSecret } from './signing-secret.js';
import { UsageError } from './command.js';

/** The `--secret` option of `send` and `trigger`. */
export const SECRET_HELP = `  --secret S        sign with S (default: the first of SVC_WEBHOOK_SECRET, else the oldest
                    secret stored in DATABASE_PATH by \`podhook register\` / \`secrets add\`)`;

/** The secret to sign with; throws a UsageError when none is given or configured. */
export async function signingSecret(explicit: string | undefined, env: Record<string, string | undefined>): Promise<string> {
  const secret = await resolveSigningSecret(explicit, env);
  if (!secret) throw new UsageError('no signing secret: pass --secret, set SVC_WEBHOOK_SECRET, or run podhook register');
  return secret;
}

/** An http(s) URL given as `--to`. */
export function parseUrl(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new UsageError(`--to must be a URL (got ${JSON.stringify(text)})`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError('--to must be an http:// or https:// URL');
  return url.href;
}
