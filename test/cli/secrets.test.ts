import { existsSync, statSync } from 'node:fs';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { secretFingerprint } from '../../src/service-api/secret-fingerprint.js';
import { main } from '../../src/cli/main.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { runCli } from '../helpers/spawn-podhook.js';
import { dbIn, useTempDir } from '../helpers/temp-dir.js';
import { runMain } from './run-main.js';

const tempDir = useTempDir();
const A = 'whsec_secrets_cmd_a_4a7d1e9b0c';
const B = 'whsec_secrets_cmd_b_81f3c6d25e';

describe('podhook secrets', () => {
  it('adds from stdin, lists fingerprints (never values), removes by id or fingerprint', async () => {
    const db = dbIn(tempDir());
    const env = { DATABASE_PATH: db };
    const added = await runCli(['secrets', 'add', '--webhook-id', 'wh_1', '--url', 'https://hooks.example.com/in'], env, `${A}\n`);
    expect(added.code).toBe(0);
    const fpA = await secretFingerprint(A);
    expect(added.stdout).toMatch(new RegExp(`^Secret stored: id [0-9a-f-]{36}, fingerprint ${fpA}\\. The running receiver accepts it now \\(1 stored secret\\)\\.\\n$`));
    expect(statSync(db).mode & 0o777).toBe(0o600);
    expect((await runMain(['secrets', 'add'], env, { stdin: B })).code).toBe(0);

    const table = await runMain(['secrets', 'list'], { ...env, SVC_WEBHOOK_SECRET: 'from-env' });
    expect(table.code).toBe(0);
    expect(table.stdout.split('\n')[0]).toMatch(/^id +webhook_id +fingerprint +created_at +url$/);
    expect(table.stdout).toContain(fpA);
    expect(table.stdout).toContain('https://hooks.example.com/in');
    expect(table.stdout).toContain('SVC_WEBHOOK_SECRET holds 1 more (accepted too, not listed).');
    expect(table.stdout + table.stderr).not.toContain(A);
    expect(table.stdout + table.stderr).not.toContain('from-env');

    const json = JSON.parse((await runMain(['secrets', 'list', '--json'], env)).stdout) as Record<string, unknown>[];
    expect(json).toEqual([
      { id: expect.any(String), webhook_id: 'wh_1', url: 'https://hooks.example.com/in', event_types: null, fingerprint: fpA, created_at: expect.any(String) },
      { id: expect.any(String), webhook_id: null, url: null, event_types: null, fingerprint: await secretFingerprint(B), created_at: expect.any(String) },
    ]);
    expect(JSON.stringify(json)).not.toContain(B);

    const byFingerprint = await runMain(['secrets', 'remove', fpA], env);
    expect(byFingerprint).toMatchObject({ code: 0, stdout: `Removed ${fpA}; 1 stored secret left.\n`, stderr: '' });
    const byId = await runMain(['secrets', 'remove', json[1]!.id as string], env);
    expect(byId.code).toBe(0);
    expect(byId.stderr).toContain('no signing secret is left');
    expect((await runMain(['secrets', 'list'], env)).stdout).toBe('No stored secrets.\n');
  });

  it('refuses a duplicate, an unknown id, and a missing database with exit 1', async () => {
    const db = dbIn(tempDir());
    expect((await runMain(['secrets', 'add'], { DATABASE_PATH: db }, { stdin: A })).code).toBe(0);
    const dup = await runMain(['secrets', 'add'], { DATABASE_PATH: db }, { stdin: ` ${A} \n` });
    expect(dup.code).toBe(1);
    expect(dup.stderr).toContain(`already stored (fingerprint ${await secretFingerprint(A)})`);
    const unknown = await runMain(['secrets', 'remove', 'abcdef123456'], { DATABASE_PATH: db });
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('no stored secret has the id or fingerprint abcdef123456');
    const nowhere = dbIn(tempDir()).replace('podhook.db', 'none.db');
    expect((await runMain(['secrets', 'list'], { DATABASE_PATH: nowhere })).code).toBe(1);
    expect(existsSync(nowhere)).toBe(false);
    const { store, close } = openSqliteStore(db);
    expect((await store.listSecrets()).map((s) => s.secret)).toEqual([A]);
    close();
  });

  it.each([
    [['secrets', 'add'], '', /no secret on stdin/],
    [['secrets', 'add'], 'two words', /must be one word/],
    [['secrets', 'add'], 'x'.repeat(1025), /longer than 1024 bytes/],
    [['secrets', 'add', A], '', /reads the secret from stdin, not from its arguments/],
    [['secrets', 'list', '--webhook-id', 'x'], '', /secrets list does not take --webhook-id/],
    [['secrets', 'remove'], '', /takes one id or fingerprint/],
    [['secrets', 'rotate'], '', /unknown action "rotate"/],
    [['secrets'], '', /say list, add or remove/],
  ])('%j with stdin %j is a usage error (exit 2)', async (argv, stdin, message) => {
    const db = dbIn(tempDir());
    const result = await runMain(argv, { DATABASE_PATH: db }, { stdin });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(message);
    expect(existsSync(db)).toBe(false);
  });

  it('does not read a secret from a terminal (it would be echoed)', async () => {
    const stdin = Object.assign(Readable.from([A]), { isTTY: true });
    let stderr = '';
    const code = await main(['secrets', 'add'], { stdout: () => {}, stderr: (t) => void (stderr += t), env: { DATABASE_PATH: dbIn(tempDir()) }, stdin });
    expect(code).toBe(2);
    expect(stderr).toContain('pipe it in');
  });
  it('add --api-key replaces the stored key, remove --api-key removes it, and says when there is none', async () => {
    const env = { DATABASE_PATH: dbIn(tempDir()) };
    expect((await runMain(['secrets', 'remove', '--api-key'], env)).code).toBe(1); // no database yet
    const first = await runMain(['secrets', 'add', '--api-key'], env, { stdin: 'svc_key_first_0001' });
    expect(first.stdout).toBe(`API key stored: fingerprint ${await secretFingerprint('svc_key_first_0001')}. It is sent only as X-API-Key.\n`);
    const second = await runMain(['secrets', 'add', '--api-key'], { ...env, SVC_API_KEY: 'from-env' }, { stdin: 'svc_key_second_0002' });
    expect(second.stdout).toContain('API key stored (replacing the one before)');
    expect(second.stdout).toContain('SVC_API_KEY is set and wins over it');
    expect((await runMain(['secrets', 'add', '--api-key', '--url', 'https://x.example.com'], env, { stdin: 'k' })).code).toBe(2);
    expect((await runMain(['secrets', 'remove', '--api-key'], env)).stdout).toBe('API key removed.\n');
    const none = await runMain(['secrets', 'remove', '--api-key'], env);
    expect(none.code).toBe(1);
    expect(none.stderr).toContain('no API key is stored');
    expect((await runMain(['secrets', 'list'], env)).stdout).not.toContain('API key');
  });
});
