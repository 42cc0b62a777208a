import { execFileSync } from 'node:child_process';
import { lstatSync, mkdirSync, readdirSync, readFileSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { EXIT } from '../../src/cli/command.js';
import type { Delivery } from '../../src/core/delivery.js';
import { readPayloadModule, type JsonSchema } from '../../src/core/shapes/index.js';
import { exportLine, parseExportLine } from '../../src/core/transfer/delivery-export.js';
import { schemaProblems, validateSubset } from '../helpers/json-schema-subset.js';
import { dbIn, useTempDir } from '../helpers/temp-dir.js';
import { runCli } from '../helpers/spawn-podhook.js';
import { runMain } from './run-main.js';

const tempDir = useTempDir();
/** 31 deliveries: 24 pod.created, 3 pod.backup.failed, and one each of an unknown type, a body not JSON, an array body, a quarantined conflict. */
const FIXTURE = fileURLToPath(new URL('../fixtures/shapes/deliveries.jsonl', import.meta.url));
const SUMMARY = 'Read 31 deliveries: 27 samples of 2 event types; skipped 1 not JSON, 1 not a JSON object, 1 of an unknown type, 1 quarantined.\n';

const fixtureDeliveries = (): Delivery[] => readFileSync(FIXTURE, 'utf8').trim().split('\n').map(parseExportLine);
const payloadOf = (d: Delivery) => JSON.parse(new TextDecoder().decode(d.body)) as Record<string, any>;

/** An export file of the fixture's samples, the first pod.created's payload changed by `change`. */
function changedExport(change: (payload: Record<string, any>) => void): string {
  let changed = false;
  const lines = fixtureDeliveries().map((d) => {
    if (changed || d.eventType !== 'pod.created' || d.status === 'quarantined') return exportLine(d);
    changed = true;
    const payload = payloadOf(d);
    change(payload);
    return exportLine({ ...d, body: new TextEncoder().encode(JSON.stringify(payload)) });
  });
  const file = join(tempDir(), 'changed.jsonl');
  writeFileSync(file, lines.join(''));
  return file;
}

/** The module learned from the fixture, in a fresh folder. */
async function fixtureModule(): Promise<string> {
  const out = join(tempDir(), 'handlers', '_payloads.ts');
  const result = await runMain(['schemas', '--from', FIXTURE, '--out', out], {});
  expect(result).toEqual({ code: EXIT.ok, stdout: `Wrote ${out}: 2 of 11 event types have a learned shape.\n`, stderr: SUMMARY });
  return out;
}

describe('podhook schemas --from an export file', () => {
  it('writes the module, skipping and counting what is not a sample', async () => {
    const text = readFileSync(await fixtureModule(), 'utf8');
    expect(text).toContain('// pod.created                24  2026-05-01T12:00:00.000Z  2026-05-02T11:00:00.000Z\n');
    expect(text).toContain('// pod.backup.failed           3  2026-05-02T12:00:00.000Z  2026-05-02T14:00:00.000Z\n');
    expect(text).toContain('// pod.active                  0  (no sample: any JSON object, as without this file)\n');
    expect(text).toContain('  /** seen: "active", "provisioning" */\n    status: string;\n');
    expect(text).toContain('  note?: string;\n');
    // The quarantined delivery's body (an id that is no uuid, a status "hijacked") was left out.
    expect(text).toContain('    id: z.uuid(),\n');
    expect(text).not.toContain('hijacked');
    const shapes = readPayloadModule(text);
    expect(shapes.types['pod.backup.failed']!.shape.properties!.retry_in).toEqual({ types: ['integer', 'null'] });
  });

  it('writes the same bytes from the same samples: twice, and from the database they were imported into', async () => {
    const out = await fixtureModule();
    const first = readFileSync(out);
    const again = await runMain(['schemas', '--from', FIXTURE, '--out', out], {});
    expect(again.stdout).toBe(`Unchanged ${out}: 2 of 11 event types have a learned shape.\n`);
    expect(readFileSync(out).equals(first)).toBe(true);

    const database = dbIn(tempDir());
    expect((await runMain(['import', FIXTURE], { DATABASE_PATH: database })).code).toBe(EXIT.ok);
    const fromStore = join(tempDir(), '_payloads.ts');
    const stored = await runMain(['schemas', '--out', fromStore], { DATABASE_PATH: database });
    expect(stored).toEqual({ code: EXIT.ok, stdout: `Wrote ${fromStore}: 2 of 11 event types have a learned shape.\n`, stderr: SUMMARY });
    expect(readFileSync(fromStore).equals(first)).toBe(true);
  });

  it('takes --type and --since (ISO or a duration)', async () => {
    const out = join(tempDir(), '_payloads.ts');
    const since = await runMain(['schemas', '--from', FIXTURE, '--out', out, '--since', '2026-05-02T00:00:00Z'], {});
    expect(since.stderr).toBe('Read 19 deliveries: 15 samples of 2 event types; skipped 1 not JSON, 1 not a JSON object, 1 of an unknown type, 1 quarantined.\n');
    expect(readFileSync(out, 'utf8')).toContain('// pod.created                12  2026-05-02T00:00:00.000Z  2026-05-02T11:00:00.000Z\n');
    const typed = await runMain(['schemas', '--from', FIXTURE, '--json', '--type', 'pod.backup.failed'], {});
    expect(typed.stderr).toBe('Read 3 deliveries: 3 samples of 1 event type.\n');
    expect(Object.keys(JSON.parse(typed.stdout).$defs)).toEqual(['pod.backup.failed']);
    // Every fixture delivery is years old by now.
    expect((await runMain(['schemas', '--from', FIXTURE, '--json', '--since', '7d'], {})).stderr).toBe('Read 0 deliveries: 0 samples of 0 event types.\n');
  });

  it('with --type replaces that type in the existing module and keeps the others', async () => {
    const out = await fixtureModule();
    const before = readPayloadModule(readFileSync(out, 'utf8'));
    const file = changedExport((p) => void (p.pod.region = 'eu-1'));
    const result = await runMain(['schemas', '--from', file, '--out', out, '--type', 'pod.created'], {});
    expect(result.code).toBe(EXIT.ok);
    const after = readPayloadModule(readFileSync(out, 'utf8'));
    expect(after.types['pod.backup.failed']).toEqual(before.types['pod.backup.failed']);
    expect(after.types['pod.created']!.shape.properties!.pod!.properties!.region).toEqual({ types: ['string'] });
  });
});

describe('podhook schemas --check', () => {
  it('exits 0 with one OK line when the samples fit the module', async () => {
    const out = await fixtureModule();
    expect(await runMain(['schemas', '--from', FIXTURE, '--out', out, '--check'], {})).toEqual({ code: EXIT.ok, stdout: `OK: the samples fit ${out}\n`, stderr: SUMMARY });
  });

  it.each([
    ['a new field', (p: Record<string, any>) => void (p.pod.region = 'eu-1'), ['pod.created $.pod.region: new field: string']],
    ['a required field gone', (p: Record<string, any>) => void delete p.pod.tier, ['pod.created $.pod.tier: field gone: was required, missing from some samples']],
    ['a changed type', (p: Record<string, any>) => void (p.size_bytes = 1.5), ['pod.created $.size_bytes: changed type: integer → number (a value with a fraction)']],
    ['a lost format and nullable', (p: Record<string, any>) => void ((p.pod.id = 'p-1'), (p.note = null)), ['pod.created $.note: changed type: now nullable (was string)', 'pod.created $.pod.id: changed type: not always a uuid now']],
    ['a new low-cardinality value', (p: Record<string, any>) => void (p.pod.status = 'paused'), ['pod.created $.pod.status: new value "paused" (seen: "active", "provisioning")']],
  ])('exits 1 with one line per difference: %s', async (_, change, lines) => {
    const out = await fixtureModule();
    const result = await runMain(['schemas', '--from', changedExport(change), '--out', out, '--check'], {});
    expect(result.code).toBe(EXIT.failure);
    expect(result.stdout).toBe(lines.map((l) => `${l}\n`).join(''));
    expect(result.stderr).toContain(`${lines.length} ${lines.length === 1 ? 'difference' : 'differences'} from ${out}: run podhook schemas again`);
    // --check writes nothing.
    expect((await runMain(['schemas', '--from', FIXTURE, '--out', out, '--check'], {})).code).toBe(EXIT.ok);
  });

  it('compares only the type asked for, against the database as well', async () => {
    const out = await fixtureModule();
    const database = dbIn(tempDir());
    expect((await runMain(['import', changedExport((p) => void (p.pod.status = 'paused'))], { DATABASE_PATH: database })).code).toBe(EXIT.ok);
    expect((await runMain(['schemas', '--out', out, '--check'], { DATABASE_PATH: database })).code).toBe(EXIT.failure);
    const other = await runMain(['schemas', '--out', out, '--check', '--type', 'pod.backup.failed'], { DATABASE_PATH: database });
    expect(other).toMatchObject({ code: EXIT.ok, stdout: `OK: the samples fit ${out}\n` });
  });

  it('fails (exit 1) without a module to compare with, or with one it cannot read', async () => {
    const missing = join(tempDir(), 'none.ts');
    expect(await runMain(['schemas', '--from', FIXTURE, '--out', missing, '--check'], {})).toEqual({
      code: EXIT.failure,
      stdout: '',
      stderr: `podhook schemas: no module at ${missing}: run podhook schemas first (or give --out PATH)\n`,
    });
    const other = join(tempDir(), 'other.ts');
    writeFileSync(other, 'export const x = 1;\n');
    const unreadable = await runMain(['schemas', '--from', FIXTURE, '--out', other, '--check'], {});
    expect(unreadable.code).toBe(EXIT.failure);
    expect(unreadable.stderr).toContain(`podhook schemas: ${other}: no \`export const PAYLOAD_SHAPES = {…}\``);
  });
});

describe('podhook schemas --json', () => {
  it('prints one JSON Schema 2020-12 document every sample validates against', async () => {
    const result = await runMain(['schemas', '--from', FIXTURE, '--json'], {});
    expect(result.code).toBe(EXIT.ok);
    const doc = JSON.parse(result.stdout) as JsonSchema;
    expect(doc.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
    expect(schemaProblems(doc)).toEqual([]);
    const defs = doc.$defs as Record<string, JsonSchema>;
    expect(Object.keys(defs)).toHaveLength(11);
    const samples = fixtureDeliveries().filter((d) => d.status !== 'quarantined' && (d.eventType === 'pod.created' || d.eventType === 'pod.backup.failed'));
    expect(samples).toHaveLength(27);
    for (const d of samples) expect(validateSubset(defs[d.eventType]!, payloadOf(d))).toEqual([]);
    expect((defs['pod.created']!.properties as Record<string, JsonSchema>).size_bytes).toEqual({ type: 'integer' });
  });
});

describe('podhook schemas: terminal and usage', () => {
  it('draws a progress bar only on a terminal, for a file and for the database', async () => {
    const out = join(tempDir(), '_payloads.ts');
    const onTerminal = await runMain(['schemas', '--from', FIXTURE, '--out', out], {}, { stderrIsTTY: true });
    expect(onTerminal.stderr).toContain(`\r[${'#'.repeat(30)}] 31/31\n`);
    const database = dbIn(tempDir());
    await runMain(['import', FIXTURE], { DATABASE_PATH: database });
    const stored = await runMain(['schemas', '--out', out], { DATABASE_PATH: database }, { stderrIsTTY: true });
    expect(stored.stderr).toContain(`\r[${'#'.repeat(30)}] 31 deliveries\n`);
    const onPipe = await runMain(['schemas', '--out', out], { DATABASE_PATH: database });
    expect(onPipe.stderr).toBe(SUMMARY);
  });

  it('refuses --check with --json, --json with --out, an unknown type and a bad --since (exit 2); a missing database is exit 1', async () => {
    for (const args of [['--check', '--json'], ['--json', '--out', 'x.ts'], ['--type', 'pod.creatd'], ['--since', 'yesterday']]) {
      const result = await runMain(['schemas', '--from', FIXTURE, ...args], {});
      expect(result.code, args.join(' ')).toBe(EXIT.usage);
      expect(result.stdout).toBe('');
    }
    const missing = await runMain(['schemas', '--json'], { DATABASE_PATH: join(tempDir(), 'none.db') });
    expect(missing.code).toBe(EXIT.failure);
    expect(missing.stderr).toContain('no database at');
  });
});

describe('podhook schemas --out: a regular file or a new path, nothing else', () => {
  /**
   * A folder holding a FIFO, a folder and a link, and copies of /dev/null and /dev/full made with
   * mknod as root; another user cannot make device nodes, and points at the real ones instead
   * (which it could not replace either: the refusal must come before any read).
   */
  function oddPaths() {
    const dir = join(tempDir(), 'odd');
    mkdirSync(dir);
    const asRoot = process.getuid?.() === 0;
    if (asRoot) {
      execFileSync('mknod', [join(dir, 'null'), 'c', '1', '3']);
      execFileSync('mknod', [join(dir, 'full'), 'c', '1', '7']);
    }
    execFileSync('mkfifo', [join(dir, 'fifo')]);
    mkdirSync(join(dir, 'folder'));
    writeFileSync(join(dir, 'real.ts'), 'export {};\n');
    symlinkSync(join(dir, 'real.ts'), join(dir, 'link.ts'));
    const devices = asRoot ? [join(dir, 'null'), join(dir, 'full')] : ['/dev/null', '/dev/full'];
    return { dir, devices, made: asRoot ? ['null', 'full'] : [] };
  }

  it('refuses a device, a FIFO, a folder or a link with one line and exit 2, reading and replacing nothing', async () => {
    const { dir, devices, made } = oddPaths();
    const cases: [string, string][] = [
      ...devices.map((d): [string, string] => [d, 'a character device']),
      [join(dir, 'fifo'), 'a FIFO'],
      [join(dir, 'folder'), 'a directory'],
      [join(dir, 'link.ts'), 'a symbolic link'],
    ];
    for (const [out, kind] of cases) {
      for (const extra of [[], ['--type', 'pod.created'], ['--check']]) {
        const result = await runMain(['schemas', '--from', FIXTURE, '--out', out, ...extra], {});
        expect(result.code, `${out} ${extra.join(' ')}`).toBe(EXIT.usage);
        expect(result.stdout).toBe('');
        expect(result.stderr).toBe(`podhook schemas: --out ${out} is ${kind}, not a regular file (see podhook schemas --help)\n`);
      }
    }
    for (const d of devices) expect(lstatSync(d).isCharacterDevice()).toBe(true);
    expect(lstatSync(join(dir, 'fifo')).isFIFO()).toBe(true);
    expect(lstatSync(join(dir, 'link.ts')).isSymbolicLink()).toBe(true);
    expect(readFileSync(join(dir, 'real.ts'), 'utf8')).toBe('export {};\n');
    expect(readdirSync(dir).sort()).toEqual(['fifo', 'folder', ...made, 'link.ts', 'real.ts'].sort());
  });

  it('refuses an empty --out without leaving a temporary file', async () => {
    const before = readdirSync('.');
    const result = await runMain(['schemas', '--from', FIXTURE, '--out', ''], {});
    expect(result).toEqual({ code: EXIT.usage, stdout: '', stderr: 'podhook schemas: --out must name a file (see podhook schemas --help)\n' });
    expect(readdirSync('.')).toEqual(before);
  });

  it('refuses a path under /proc it cannot create, at once (a recursive mkdir there retries forever)', { timeout: 40_000 }, async () => {
    const out = '/proc/podhook-nowhere/handlers/_payloads.ts';
    const result = await runCli(['schemas', '--from', FIXTURE, '--out', out], {}, undefined, 30_000);
    expect(result.code, result.stderr).toBe(EXIT.usage);
    expect(result.stderr).toBe(`${SUMMARY}podhook schemas: --out ${out}: cannot create /proc/podhook-nowhere: ENOENT (see podhook schemas --help)\n`);
  });

  it('reads an existing module with a size cap: one larger is refused (exit 1), not read whole', async () => {
    const out = join(tempDir(), 'huge.ts');
    writeFileSync(out, '');
    truncateSync(out, 64 * 1024 * 1024); // sparse: 64 MiB of zeros that cost no disk
    for (const extra of [[], ['--type', 'pod.created'], ['--check']]) {
      const result = await runMain(['schemas', '--from', FIXTURE, '--out', out, ...extra], {});
      expect(result.code, extra.join(' ')).toBe(EXIT.failure);
      expect(result.stderr.split('\n').filter((l) => l.startsWith('podhook schemas:'))).toEqual([`podhook schemas: ${out}: larger than 16777216 bytes: not a module podhook schemas wrote`]);
    }
    expect(lstatSync(out).size).toBe(64 * 1024 * 1024);
  });
});
