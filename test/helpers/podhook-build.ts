// The build the spawned `podhook` processes of a test run start from: the current sources
// (src/, handlers/ and the test fixtures) compiled once per run, laid out as the installed image
// is (package.json, bin/podhook.js, dist/, drizzle/), so `node <build>/bin/podhook.js` runs the
// compiled entry the way the Docker image does, with no TypeScript loader in the process or in its
// handler threads. The compiler is the esbuild that tsx runs the sources with in a checkout; it
// bundles them (see RUN_BY_PATH), which the image's tsc output is not: a process then starts in
// about two thirds of the CPU time, and a test run starts a few hundred of them.
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The folders compiled, as tsconfig.build.json has them plus the fixtures (`--handlers test/fixtures/…`). */
const COMPILED = ['src', 'handlers', 'test/fixtures'];
/** Not part of a Node process: bundled by wrangler for the Worker (as tsconfig.build.json leaves them out), and tests. */
const LEFT_OUT = [/^src\/worker\//, /^src\/store\/d1\//, /\.test\.tsx?$/, /\.d\.ts$/];

/** Where the runs' builds go: beside the installed packages, so bare imports resolve to them; gone with `rm -rf node_modules`. */
export const BUILDS_DIR = join(REPO_ROOT, 'node_modules', '.cache', 'podhook-test-build');

function sources(root: string): string[] {
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory()) {
        if (entry.name !== 'node_modules' && !entry.name.startsWith('.')) walk(path);
      }
      else if (/\.tsx?$/.test(entry.name) && !LEFT_OUT.some((re) => re.test(path))) found.push(path);
    }
  };
  for (const dir of COMPILED) if (existsSync(join(root, dir))) walk(dir);
  return found;
}

/**
 * The modules something starts by path (bin/podhook.js, the package's exports, a handler thread),
 * besides handlers/ and test/fixtures/: the build's entry points. The rest of src/ is bundled
 * into them (ESM with shared chunks), which a process loads in a few files instead of a few
 * hundred: most of a podhook process's start was Node's ESM loader resolving and reading each file.
 */
const RUN_BY_PATH = ['src/cli/main.ts', 'src/index.ts', 'src/testing/index.ts', 'src/node/handler-threads/handler-thread.ts'];

/**
 * The packages bundled with podhook's code (plain ESM, many files each). Every other package is
 * imported from node_modules as before: native ones (better-sqlite3), CommonJS ones (pg, pino),
 * those loaded lazily or watched by tests (OpenTelemetry), and the test tools.
 */
const BUNDLED_PACKAGES = /^(?:drizzle-orm|zod|hono|@hono\/node-server)(?:\/|$)/;

function keepPackagesOutside(): import('esbuild').Plugin {
  return {
    name: 'keep-packages-outside',
    setup(build) {
      // A bare specifier other than podhook's own name (tsconfig's paths map it to src/).
      build.onResolve({ filter: /^[^./]/ }, ({ path }) => (/^podhook(?:\/|$)/.test(path) || BUNDLED_PACKAGES.test(path) ? undefined : { path, external: true }));
    },
  };
}

/**
 * `import.meta.url` in a bundled module names the file it is bundled into. Each of ours is given
 * the URL its own compiled file would have, so what it finds beside itself (a handler thread's
 * entry, handlers/index.js, the migrations) is where it was.
 */
function unbundledModuleUrls(root: string, dir: string): import('esbuild').Plugin {
  return {
    name: 'unbundled-module-urls',
    setup(build) {
      build.onLoad({ filter: /\.tsx?$/ }, ({ path }) => {
        const rel = relative(root, path);
        if (rel.startsWith('..') || rel.includes('node_modules')) return undefined;
        const text = readFileSync(path, 'utf8');
        if (!text.includes('import.meta.url')) return undefined;
        const url = pathToFileURL(join(dir, 'dist', rel.replace(/\.tsx?$/, '.js'))).href;
        return { contents: text.replaceAll('import.meta.url', JSON.stringify(url)), loader: path.endsWith('x') ? 'tsx' : 'ts' };
      });
    },
  };
}

/** tsx's own esbuild (tsx is a devDependency; esbuild is its dependency). */
export function esbuild(): typeof import('esbuild') {
  const fromTsx = createRequire(createRequire(join(REPO_ROOT, 'package.json')).resolve('tsx/esm/api'));
  return fromTsx('esbuild') as typeof import('esbuild');
}

export interface PodhookBuild {
  /** The build's root: package.json, bin/, dist/, drizzle/. */
  root: string;
  /** `node <bin> …` runs podhook from the build. */
  bin: string;
  /** How long the compile took (ms). */
  ms: number;
}

/**
 * Compiles the current sources into a fresh folder under BUILDS_DIR (this process's own) and
 * returns it. Folders left by runs whose process is gone are removed first.
 */
export async function buildPodhook(root = REPO_ROOT): Promise<PodhookBuild> {
  removeStaleBuilds();
  const started = performance.now();
  const dir = join(BUILDS_DIR, `${process.pid}-${Date.now().toString(36)}`);
  const building = `${dir}.partial`;
  mkdirSync(building, { recursive: true });
  await esbuild().build({
    entryPoints: sources(root).filter((p) => !p.startsWith('src/') || RUN_BY_PATH.includes(p)).map((p) => join(root, p)),
    bundle: true,
    // The code two entries share is one chunk file both import: one module, as unbundled.
    splitting: true,
    chunkNames: 'chunks/[name]-[hash]',
    outdir: join(building, 'dist'),
    outbase: root,
    format: 'esm',
    platform: 'node',
    target: `node${process.versions.node}`,
    tsconfig: join(root, 'tsconfig.json'),
    sourcemap: 'linked',
    logLevel: 'error',
    plugins: [keepPackagesOutside(), unbundledModuleUrls(root, dir)],
  });
  copyFileSync(join(root, 'package.json'), join(building, 'package.json'));
  mkdirSync(join(building, 'bin'));
  copyFileSync(join(root, 'bin', 'podhook.js'), join(building, 'bin', 'podhook.js'));
  // Read where they are: migrations are data, not compiled.
  symlinkSync(join(root, 'drizzle'), join(building, 'drizzle'), 'dir');
  writeFileSync(join(building, 'README'), 'A test run\'s build of podhook (test/helpers/podhook-build.ts): removed when the run ends.\n');
  renameSync(building, dir);
  return { root: dir, bin: join(dir, 'bin', 'podhook.js'), ms: Math.round(performance.now() - started) };
}

/** Removes the builds of runs whose process is no longer alive (a run killed before its teardown). */
function removeStaleBuilds() {
  if (!existsSync(BUILDS_DIR)) return;
  for (const name of readdirSync(BUILDS_DIR)) {
    const pid = Number(/^(\d+)-/.exec(name)?.[1]);
    if (!Number.isInteger(pid) || pid === process.pid || alive(pid)) continue;
    rmSync(join(BUILDS_DIR, name), { recursive: true, force: true });
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export function removeBuild(build: PodhookBuild) {
  rmSync(build.root, { recursive: true, force: true });
}

/**
 * An argument as the build's podhook needs it: a path (absolute, or relative to `cwd`) to a
 * TypeScript module the build compiled becomes that module's compiled file; anything else is
 * unchanged. `--flag=path` too.
 */
export function builtArgument(build: PodhookBuild, arg: string, cwd = REPO_ROOT): string {
  const eq = arg.startsWith('--') ? arg.indexOf('=') : -1;
  if (eq > 0) return `${arg.slice(0, eq + 1)}${builtArgument(build, arg.slice(eq + 1), cwd)}`;
  if (!/\.tsx?$/.test(arg)) return arg;
  const rel = relative(REPO_ROOT, resolve(cwd, arg));
  if (rel.startsWith('..') || !COMPILED.some((d) => rel.startsWith(`${d}${sep}`))) return arg;
  const compiled = join(build.root, 'dist', rel.replace(/\.tsx?$/, '.js'));
  return existsSync(compiled) ? compiled : arg;
}

/** A TypeScript module the argument still names (one the build did not compile: a test's own file). */
export function namesTypeScript(arg: string, cwd = REPO_ROOT): boolean {
  const value = arg.startsWith('--') && arg.includes('=') ? arg.slice(arg.indexOf('=') + 1) : arg;
  if (!/\.tsx?$/.test(value)) return false;
  try {
    return statSync(resolve(cwd, value)).isFile();
  } catch {
    return false;
  }
}
