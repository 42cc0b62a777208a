import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../../src/emulator/start-emulator.js';
import { openPostgres } from '../../../src/store/postgres/open-postgres.js';
import { freshDatabaseUrl } from '../../helpers/postgres.js';
import { nodeScriptArgs, REPO_ROOT } from '../../helpers/spawn-podhook.js';

const KEY = 'svc_live_key_replicas_01';
const SCRIPT = 'test/fixtures/queue-actions.ts';
const running: RunningEmulator[] = [];
afterEach(async () => {
  for (const r of running.splice(0)) await r.close();
});

interface Report {
  calls: Record<string, number>;
  waitedMs: number;
  failures: string[];
  ms: number;
}

/** One process of `queue-actions.ts`: resolves with its exit code and report. */
async function queueIn(env: Record<string, string>): Promise<{ code: number | null; report: Report; stderr: string }> {
  const child = spawn(process.execPath, nodeScriptArgs(SCRIPT, REPO_ROOT), { cwd: REPO_ROOT, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c) => (stdout += c));
  child.stderr.on('data', (c) => (stderr += c));
  const [code] = (await once(child, 'close')) as [number | null];
  return { code, report: JSON.parse(stdout.trim().split('\n').at(-1) || '{}') as Report, stderr };
}

describe('the account limits across three processes on one PostgreSQL', () => {
  it('keep 210 actions from three processes within 60 writes per window at a service that answers 429 past it: at most the first 429, each action queued once', async () => {
    // The service's write bucket, scaled down: 60 writes per 2 s window (fixed, from its first request).
    const emu = await startEmulator({ apiKey: KEY, seedPods: 3, writeLimit: 60, writeWindowMs: 2_000 });
    running.push(emu);
    const url = await freshDatabaseUrl();
    const migrated = openPostgres(url);
    await migrated.migrate();
    await migrated.close();
    const pods = emu.emulator.pods.all().map((p) => p.id).join(',');
    const env = (prefix: string) => ({ DATABASE_URL: url, SVC_BASE_URL: emu.url, SVC_API_KEY: KEY, SVC_WRITE_LIMIT: '60/2s', POD_IDS: pods, COUNT: '70', PREFIX: prefix, PARALLEL: '6' });

    const started = Date.now();
    const results = await Promise.all(['proc-1', 'proc-2', 'proc-3'].map((p) => queueIn(env(p))));
    const elapsed = Date.now() - started;
    for (const r of results) expect(r.code, `${r.stderr}${JSON.stringify(r.report)}`).toBe(0);

    const { writes } = emu.emulator.bucketCounts();
    expect(writes.refused).toBeLessThanOrEqual(1);
    expect(writes.allowed).toBe(210);
    const ids = emu.emulator.queuedActions().map((a) => a.request_id);
    expect(ids).toHaveLength(210);
    expect(new Set(ids).size).toBe(210);
    for (const p of ['proc-1', 'proc-2', 'proc-3']) for (let n = 0; n < 70; n++) expect(ids).toContain(`${p}-${n}`);
    // 210 writes at 60 per 2 s cannot take less than three windows; the processes waited for them.
    expect(elapsed).toBeGreaterThan(6_000);
    expect(results.reduce((sum, r) => sum + r.report.waitedMs, 0)).toBeGreaterThan(0);
    console.log(JSON.stringify({ elapsed, refused: writes.refused, reports: results.map((r) => r.report) }));
  }, 90_000);
});
