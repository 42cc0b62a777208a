#!/usr/bin/env node
// The `podhook` command. In a source checkout it runs the TypeScript sources through tsx, so
// edits to handlers/ take effect without a build; an installed image (no src/, no tsx) runs
// the compiled dist/.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = new URL('../', import.meta.url);
const source = new URL('src/cli/main.ts', root);
const compiled = new URL('dist/src/cli/main.js', root);

let entry = compiled;
if (existsSync(source)) {
  try {
    const { register } = await import('tsx/esm/api');
    // tsconfig.json's paths map `podhook` and `podhook/testing` to src/, whatever the cwd.
    register({ tsconfig: fileURLToPath(new URL('tsconfig.json', root)) });
    entry = source;
  } catch {
    if (!existsSync(compiled)) {
      console.error('podhook: tsx is not installed and dist/ is not built: run `npm install` (or `npm run build`).');
      process.exit(1);
    }
  }
}
const { main } = await import(entry.href);
process.exitCode = await main(process.argv.slice(2));
