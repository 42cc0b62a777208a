// The browser test's Chromium on a machine with none installed (issue 34): the @sparticuz/chromium
// package's, unpacked into a folder of its own per version, or CHROMIUM_PATH's when that is set.
import { execFile } from 'node:child_process';
import { chmodSync, lstatSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { ChromiumSetupError, findChromium } from '../helpers/chromium.js';
import { useTempDir } from '../helpers/temp-dir.js';

const tempDir = useTempDir('podhook-chromium-test-');
const manifest = JSON.parse(readFileSync(join(import.meta.dirname, '..', '..', 'package.json'), 'utf8')) as { devDependencies: Record<string, string> };
/** The version package.json pins: the folder the browser is unpacked into is named for it. */
const pinned = manifest.devDependencies['@sparticuz/chromium']!;
const savedTmpdir = process.env.TMPDIR;
afterEach(() => {
  if (savedTmpdir === undefined) delete process.env.TMPDIR;
  else process.env.TMPDIR = savedTmpdir;
});

describe('findChromium', () => {
  it('takes CHROMIUM_PATH when it is set, and unpacks nothing', async () => {
    const cacheDir = tempDir();
    const system = join(tempDir(), 'chromium');
    writeFileSync(system, '#!/bin/sh\necho Chromium 1.0\n');
    chmodSync(system, 0o755);
    const found = await findChromium({ env: { CHROMIUM_PATH: system }, cacheDir });
    expect(found.executablePath).toBe(system);
    expect(found.source).toBe('CHROMIUM_PATH');
    expect(found.env.FONTCONFIG_FILE).toBeUndefined();
    expect(readdirSync(cacheDir)).toEqual([]);
  });

  it('fails saying so when CHROMIUM_PATH names no executable, instead of falling back', async () => {
    const cacheDir = tempDir();
    const missing = join(tempDir(), 'no-such-chromium');
    await expect(findChromium({ env: { CHROMIUM_PATH: missing }, cacheDir })).rejects.toThrow(
      new ChromiumSetupError(`CHROMIUM_PATH=${missing} is not an executable file: point it at a Chromium, or unset it to use the one from @sparticuz/chromium`),
    );
    const notExecutable = join(tempDir(), 'chromium');
    writeFileSync(notExecutable, 'not a program');
    await expect(findChromium({ env: { CHROMIUM_PATH: notExecutable }, cacheDir })).rejects.toThrow(`CHROMIUM_PATH=${notExecutable} is not an executable file`);
    expect(readdirSync(cacheDir)).toEqual([]);
  });

  it("unpacks the package's Chromium once into a folder of its own, whatever another version left in the temp folder", async () => {
    // Another version's leftovers where the package unpacks by default: they killed the next browser at launch.
    const leftovers = tempDir();
    const cacheDir = tempDir();
    writeFileSync(join(leftovers, 'chromium'), '#!/bin/sh\necho Chromium 1.0 from a leftover\n');
    chmodSync(join(leftovers, 'chromium'), 0o755);
    writeFileSync(join(leftovers, 'libGLESv2.so'), 'not a library');
    process.env.TMPDIR = leftovers;
    const home = join(cacheDir, pinned);

    // Two runs at the same moment: both get the one whole copy.
    const [first, second] = await Promise.all([findChromium({ env: {}, cacheDir }), findChromium({ env: {}, cacheDir })]);
    expect(first.executablePath).toBe(join(home, 'chromium'));
    expect(second.executablePath).toBe(first.executablePath);
    expect(first.source).toBe(`@sparticuz/chromium ${pinned}`);
    expect(readdirSync(cacheDir)).toEqual([pinned]);
    expect(readdirSync(leftovers).sort()).toEqual(['chromium', 'libGLESv2.so']);

    const { stdout } = await promisify(execFile)(first.executablePath, ['--version']);
    expect(stdout).toMatch(new RegExp(`^Chromium ${pinned.split('.')[0]}\\.`));
    // Ours alone (as root, tar would have kept the packager's uid on the libraries and fonts).
    for (const path of [home, ...readdirSync(home, { recursive: true, encoding: 'utf8' }).map((p) => join(home, p))]) {
      expect(lstatSync(path).uid, path).toBe(process.getuid!());
    }
    // Its fonts beside the system's, so text renders where the machine has no fonts of its own.
    expect(first.env.FONTCONFIG_FILE).toBe(join(home, 'fonts.conf'));
    expect(readFileSync(join(home, 'fonts.conf'), 'utf8')).toContain(`<dir>${join(home, 'fonts', 'fonts')}</dir>`);
    expect(statSync(join(home, 'fonts', 'fonts', 'Open_Sans', 'OpenSans-Regular.ttf')).size).toBeGreaterThan(0);

    // A later run uses that copy as it is.
    const inode = statSync(first.executablePath).ino;
    expect((await findChromium({ env: {}, cacheDir })).executablePath).toBe(first.executablePath);
    expect(statSync(first.executablePath).ino).toBe(inode);
  }, 60_000);
});
