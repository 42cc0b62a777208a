import { describe, expect, it } from 'vitest';
import { defineCommand, EXIT } from '../../src/cli/command.js';
import { EVENT_TYPES } from '../../src/core/events/event-types.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { newDelivery } from '../store/store-contract.js';
import { dbIn, useTempDir } from '../helpers/temp-dir.js';
import { runMain } from './run-main.js';

const tempDir = useTempDir();

/** A database holding one dead delivery whose last_error is `lastError`. */
async function databaseWithError(lastError: string) {
  const path = dbIn(tempDir());
  const { store, close } = openSqliteStore(path);
  const d = newDelivery({ status: 'dead', lastError });
  await store.claim([d]);
  close();
  return { env: { DATABASE_PATH: path }, eventId: d.eventId };
}

describe('podhook: usage errors say what was meant', () => {
  it('suggests the closest command for an unknown one (exit 2)', async () => {
    const typo = await runMain(['deliverys'], {});
    expect(typo.code).toBe(EXIT.usage);
    expect(typo.stderr).toBe('podhook: unknown command "deliverys": did you mean podhook deliveries? (see podhook --help)\n');
    expect((await runMain(['tirgger'], {})).stderr).toContain('did you mean podhook trigger?');
    const far = await runMain(['xyzzy'], {});
    expect(far.code).toBe(EXIT.usage);
    expect(far.stderr).toBe('podhook: unknown command "xyzzy" (see podhook --help)\n');
  });

  it('refuses an unknown --type in deliveries (exit 2), naming the 11 types, with the same check as trigger', async () => {
    const { env } = await databaseWithError('x');
    const deliveries = await runMain(['deliveries', '--type', 'pod.backup.faild'], env);
    expect(deliveries.code).toBe(EXIT.usage);
    expect(deliveries.stdout).toBe('');
    expect(deliveries.stderr).toContain('unknown event type "pod.backup.faild" (did you mean pod.backup.failed?)');
    for (const type of EVENT_TYPES) expect(deliveries.stderr).toContain(type);
    const trigger = await runMain(['trigger', 'pod.backup.faild', '--secret', 'whsec_x'], {});
    expect(trigger.code).toBe(EXIT.usage);
    // One check: the same words after each command's prefix.
    expect(trigger.stderr.replace('podhook trigger: ', '').replace(/ \(see podhook trigger --help\)/, '')).toBe(
      deliveries.stderr.replace('podhook deliveries: ', '').replace(/ \(see podhook deliveries --help\)/, ''),
    );
    expect((await runMain(['deliveries', '--type', 'pod.backup.failed'], env)).code).toBe(EXIT.ok);
  });

  it('says an event id given to replay is not a uuid (exit 2), before opening any database', async () => {
    const result = await runMain(['replay', 'abc'], { DATABASE_PATH: dbIn(tempDir()) });
    expect(result.code).toBe(EXIT.usage);
    expect(result.stderr).toContain('"abc" is not an event id: event ids are uuids');
    expect(result.stdout).toBe('');
  });

  it('finds a delivery given to replay by an upper-case id, as ingest stores ids lower-cased', async () => {
    const { env, eventId } = await databaseWithError('x');
    const result = await runMain(['replay', eventId.toUpperCase(), '--dry-run', '--handlers', 'test/fixtures/recording-handlers.ts'], env);
    expect(result.stdout).toContain(eventId);
    expect(result.stdout).not.toContain('not found');
  });

  it('cuts a long last_error visibly in the deliveries table, and keeps it whole in --json', async () => {
    const long = `handlerA: Error: ${'the upstream API answered 503 '.repeat(10)}END`;
    const { env } = await databaseWithError(long);
    const table = await runMain(['deliveries'], env);
    expect(table.code).toBe(EXIT.ok);
    const row = table.stdout.split('\n')[1]!;
    expect(row).toContain(`${long.slice(0, 57)}...`);
    expect(row).not.toContain('END');
    const json = await runMain(['deliveries', '--json'], env);
    expect(JSON.parse(json.stdout)[0].last_error).toBe(long);
    const short = await databaseWithError('h: Error: short');
    expect((await runMain(['deliveries'], short.env)).stdout).toMatch(/h: Error: short\n$/);
  });
});

describe('defineCommand: options typed from parseArgs, aliases', () => {
  const seen: unknown[] = [];
  const command = defineCommand({
    name: 'probe',
    summary: 'a probe',
    usage: 'probe [--allow-local-url] [--name N]',
    help: 'Options: --allow-local-url, --name N',
    options: { 'allow-local-url': { type: 'boolean' }, name: { type: 'string' } },
    aliases: { 'allow-local-urls': 'allow-local-url' },
    async run({ values }) {
      const name: string | undefined = values.name; // typed: no cast
      seen.push({ allow: values['allow-local-url'], name, keys: Object.keys(values).sort() });
      return EXIT.ok;
    },
  });
  const io = { stdout: () => {}, stderr: () => {}, env: {}, stdin: process.stdin };

  it('takes the alias as the option itself, and the option as spelled', async () => {
    expect(await command.invoke(['--allow-local-urls', '--name', 'n'], io)).toBe(EXIT.ok);
    expect(await command.invoke(['--allow-local-url'], io)).toBe(EXIT.ok);
    expect(seen).toEqual([
      { allow: true, name: 'n', keys: ['allow-local-url', 'name'] },
      { allow: true, name: undefined, keys: ['allow-local-url'] },
    ]);
    await expect(command.invoke(['--allow-local'], io)).rejects.toThrow(/Unknown option '--allow-local'/);
    await expect(command.invoke(['extra'], io)).rejects.toThrow(/Unexpected argument 'extra'/);
  });
});
