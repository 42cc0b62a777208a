/**
 * The receiver's own secrets among its environment variables: a handler thread is started
 * without them (handler code never sees the API key, the admin token, the signing secrets, the
 * step key, the database's password or the alert URL's token). Everything else (a team's own
 * variables, OTEL_*) is passed on.
 */
export const RECEIVER_SECRET_VARIABLES = [
  'SVC_WEBHOOK_SECRET',
  'SVC_API_KEY',
  'ADMIN_TOKEN',
  'METRICS_TOKEN',
  'STEP_ENCRYPTION_KEY',
  'DATABASE_URL',
  'ALERT_WEBHOOK_URL',
] as const;

/** The environment a handler thread gets: this process's, without `RECEIVER_SECRET_VARIABLES`. */
export function threadEnv(env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const out: Record<string, string> = {};
  const drop = new Set<string>(RECEIVER_SECRET_VARIABLES);
  for (const [k, v] of Object.entries(env)) if (v !== undefined && !drop.has(k)) out[k] = v;
  return out;
}
