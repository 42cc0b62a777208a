// Which Node test files `npm run test:quick` runs: those that start no process. A file is left out
// when it, or a test module it imports (test/**, handlers/**, followed through their relative
// imports; `import type` is not an import), uses node:child_process (podhook, tsc, npm, wrangler,
// Chromium) or the run's PostgreSQL server. Found from the sources each time, so a new test file
// is sorted without a list to keep up.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** What in a module's text means a process: a child process, or the run's PostgreSQL server. */
const STARTS_A_PROCESS = /['"](?:node:)?child_process['"]|\binject\(\s*['"]postgresAdminUrl['"]/;
/** Value imports and re-exports of relative modules (not `import type` / `export type`). */
const RELATIVE_IMPORT = /(?:^|\n)\s*(?:import|export)\s+(?!type\s)(?:[^'";]*?\sfrom\s*)?['"](\.{1,2}\/[^'"]+)['"]/g;
const DYNAMIC_IMPORT = /\bimport\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g;

function testFiles(dir: string): string[] {
  if (!existsSync(join(ROOT, dir))) return [];
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const path = `${dir}/${e.name}`;
    if (e.isDirectory()) return testFiles(path);
    return e.isFile() && /\.test\.tsx?$/.test(e.name) ? [path] : [];
  });
}

/** The module a relative import names, when it is one of ours outside src/ (x.js is x.ts). */
function resolveImport(from: string, spec: string): string | undefined {
  const base = resolve(dirname(join(ROOT, from)), spec);
  const rel = relative(ROOT, base);
  if (rel.startsWith('..') || rel.startsWith('src/') || rel.startsWith('node_modules/')) return undefined;
  const candidates = [base, base.replace(/\.js$/, '.ts'), base.replace(/\.js$/, '.tsx'), `${base}.ts`, join(base, 'index.ts')];
  const found = candidates.find((c) => existsSync(c) && !c.endsWith('/'));
  return found && relative(ROOT, found);
}

/** Whether a module or one it imports starts a process (memoised per call of quickTestFiles). */
function startsProcess(file: string, seen: Map<string, boolean>): boolean {
  const known = seen.get(file);
  if (known !== undefined) return known;
  seen.set(file, false); // an import cycle adds nothing
  const text = readFileSync(join(ROOT, file), 'utf8');
  let verdict = STARTS_A_PROCESS.test(text);
  for (const re of [RELATIVE_IMPORT, DYNAMIC_IMPORT]) {
    for (const match of text.matchAll(re)) {
      if (verdict) break;
      const target = resolveImport(file, match[1]!);
      if (target && /\.(ts|tsx|mjs|js)$/.test(target)) verdict = startsProcess(target, seen);
    }
  }
  seen.set(file, verdict);
  return verdict;
}

/** The Node project's test files that start no process (test/worker/ runs in workerd: never quick). */
export function quickTestFiles(): string[] {
  const seen = new Map<string, boolean>();
  return [...testFiles('test'), ...testFiles('handlers')].filter((f) => !f.startsWith('test/worker/') && !startsProcess(f, seen)).sort();
}

/** What a test file does to modules or globals that another file sharing its modules would see. */
const CHANGES_SHARED_STATE = /\bvi\.(?:mock|doMock|stubGlobal|stubEnv|useFakeTimers)\(/;

/**
 * The quick files that mock modules, stub globals or fake timers: `npm run test:quick` gives each
 * of these its own modules (vitest's isolate), and lets the rest share them (no import per file).
 */
export function ownModulesFiles(files: readonly string[]): string[] {
  return files.filter((f) => CHANGES_SHARED_STATE.test(readFileSync(join(ROOT, f), 'utf8')));
}

/** The others: what `npm test` runs beyond `npm run test:quick` in the Node project. */
export function processTestFiles(): string[] {
  const quick = new Set(quickTestFiles());
  return [...testFiles('test'), ...testFiles('handlers')].filter((f) => !f.startsWith('test/worker/') && !quick.has(f)).sort();
}
