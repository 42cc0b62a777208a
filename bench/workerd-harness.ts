/**
 * What the Worker benches share: the bundle a deploy would upload, workerd under Miniflare reached
 * through a direct socket, D1's migrations, signed deliveries sent over keep-alive connections.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, symlinkSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { Miniflare, type WorkerOptions } from 'miniflare';

export const ROOT = new URL('..', import.meta.url).pathname;

Object.assign(process.env, { WRANGLER_SEND_METRICS: 'false', CLOUDFLARE_CF_FETCH_ENABLED: 'false', WRANGLER_HIDE_BANNER: 'true' });
delete process.env.CLOUDFLARE_API_TOKEN;

/** `--name=value` of the command line, or undefined. */
export const option = (name: string): string | undefined => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
/** `--name=N` of the command line as a number, or `fallback`. */
export const numberOption = (name: string, fallback: number): number => {
  const value = option(name);
  return value === undefined ? fallback : Number(value);
};

/** workerd processes that are children of this process. */
export function workerdChildren(): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (comm === 'workerd' && ppid === process.pid) pids.push(Number(entry));
    } catch {
      // exited while listing
    }
  }
  return pids;
}

/** `wrangler deploy --dry-run --outdir`: the bundle a deploy would upload (of the checkout at `root`). */
export function bundle(outdir: string, entry?: string, root = ROOT): string {
  const result = spawnSync(join(ROOT, 'node_modules/.bin/wrangler'), ['deploy', '--dry-run', '--outdir', outdir, ...(entry ? [entry] : [])], {
    cwd: root,
    encoding: 'utf8',
  });
  if (result.status !== 0) throw new Error(`wrangler deploy --dry-run failed:\n${result.stdout}\n${result.stderr}`);
  const js = readdirSync(outdir).find((f) => f.endsWith('.js'));
  if (!js) throw new Error(`no bundle in ${outdir}`);
  return join(outdir, js);
}

/** The tree of `ref` (git archive) in `dir`, with this checkout's node_modules: what `--against` bundles. */
export function checkout(ref: string, dir: string): string {
  const archive = spawnSync('git', ['archive', '--format=tar', ref], { cwd: ROOT, maxBuffer: 1 << 30 });
  if (archive.status !== 0) throw new Error(`git archive ${ref} failed: ${archive.stderr.toString()}`);
  mkdirSync(dir, { recursive: true });
  const untar = spawnSync('tar', ['-x', '-C', dir], { input: archive.stdout });
  if (untar.status !== 0) throw new Error(`tar failed: ${untar.stderr.toString()}`);
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  return dir;
}

/** The D1 binding as Miniflare hands it to Node (a proxy into workerd). */
export type D1 = Awaited<ReturnType<Miniflare['getD1Database']>>;

/**
 * A Worker bundle in its own workerd process under Miniflare, reached through a direct socket (not
 * Miniflare's entry worker, which adds its own routing and request handling), pinned to core 0
 * as the Node bench pins its targets. workerd's stdout (log lines) goes to `onStdout`, or nowhere.
 */
export async function startWorkerd({ name, scriptPath, options, inspectorPort, onStdout }: {
  name: string;
  scriptPath: string;
  options: WorkerOptions;
  inspectorPort?: number;
  onStdout?: (chunk: string) => void;
}): Promise<{ mf: Miniflare; url: URL; pid: number }> {
  const before = new Set(workerdChildren());
  const mf = new Miniflare({
    ...options,
    ...(inspectorPort ? { inspectorPort } : {}),
    name,
    modules: true,
    scriptPath,
    modulesRoot: join(scriptPath, '..'),
    unsafeDirectSockets: [{ host: '127.0.0.1', port: 0 }],
    handleRuntimeStdio(stdout: Readable, stderr: Readable) {
      if (onStdout) stdout.on('data', (chunk: Buffer) => onStdout(chunk.toString()));
      else stdout.resume();
      stderr.on('data', (chunk: Buffer) => {
        const text = chunk.toString();
        if (/error/i.test(text)) process.stderr.write(`[${name} workerd] ${text}`);
      });
    },
  } as ConstructorParameters<typeof Miniflare>[0]);
  await mf.ready;
  const url = await mf.unsafeGetDirectURL(name);
  const pid = workerdChildren().find((p) => !before.has(p));
  if (!pid) throw new Error(`${name}: no workerd process found`);
  spawnSync('taskset', ['-a', '-p', '-c', '0', String(pid)], { stdio: 'ignore' });
  return { mf, url, pid };
}

/** drizzle/sqlite/*.sql in order, statement by statement (drizzle-kit's breakpoints). */
export async function applyMigrations(db: D1) {
  const dir = join(ROOT, 'drizzle/sqlite');
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.sql')).sort()) {
    const statements = readFileSync(join(dir, file), 'utf8')
      .split('--> statement-breakpoint')
      .map((s) => s.trim())
      .filter(Boolean);
    await db.batch(statements.map((s) => db.prepare(s)));
  }
}

export interface Signed {
  headers: Record<string, string>;
  body: Buffer;
}

/** Sends every delivery, `concurrency` in flight over keep-alive connections; counts statuses. */
export async function send(url: URL, batch: Signed[], concurrency: number): Promise<Record<string, number>> {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const statuses: Record<string, number> = {};
  let next = 0;
  const one = (d: Signed) =>
    new Promise<void>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port: url.port, path: '/webhooks', method: 'POST', headers: d.headers, agent }, (res) => {
        statuses[res.statusCode!] = (statuses[res.statusCode!] ?? 0) + 1;
        res.resume();
        res.on('end', resolve);
      });
      req.on('error', reject);
      req.end(d.body);
    });
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < batch.length) await one(batch[next++]!);
    }),
  );
  agent.destroy();
  return statuses;
}

