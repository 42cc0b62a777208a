import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { lstatSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { exportLine } from '../../src/core/transfer/delivery-export.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { openNodeTarget } from '../helpers/node-target.js';
import { FIXED_NOW_MS, signDelivery, TEST_SECRET, toRequest } from '../helpers/sign.js';
import { dbIn, useTempDir } from '../helpers/temp-dir.js';
import { runMain } from './run-main.js';

const tempDir = useTempDir();
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

const CREDENTIAL_HEADERS = {
  'x-auth-token': 'tok-auth-1a2b',
  'api-key': 'tok-api-3c4d',
  'x-amz-security-token': 'tok-amz-5e6f',
  'cf-access-jwt-assertion': 'tok-cf-7a8b',
  'x-forwarded-for': '203.0.113.9',
  cookie: 'session=tok-cookie-9c0d',
};

/** A database holding these deliveries, received through the real receiver. */
async function seeded(deliveries = [signDelivery()], headers: Record<string, string> = {}) {
  const target = openNodeTarget(tempDir(), { secrets: [TEST_SECRET] });
  target.setNow(FIXED_NOW_MS);
  for (const d of deliveries) expect((await target.fetch(toRequest(d, undefined, headers))).status).toBe(200);
  await target.close();
  return target.databasePath;
}

describe('kept headers are an allowlist', () => {
  it('stores only content-type, content-length, user-agent, the event id and type and x-request-id; export carries no credential', async () => {
    const d = signDelivery();
    const path = await seeded([d], { ...CREDENTIAL_HEADERS, 'user-agent': 'svc-webhooks/1', 'x-request-id': 'req-allow-0001' });
    const { store, close } = openSqliteStore(path);
    const row = (await store.get(d.eventId))!;
    close();
    const allowed = ['content-length', 'content-type', 'user-agent', 'x-request-id', 'x-svc-event-id', 'x-svc-event-type'];
    expect(Object.keys(row.headers).filter((k) => !allowed.includes(k))).toEqual([]);
    expect(row.headers).toMatchObject({ 'user-agent': 'svc-webhooks/1', 'x-request-id': 'req-allow-0001', 'x-svc-event-id': d.eventId });
    const exported = await runMain(['export'], { DATABASE_PATH: path });
    for (const value of Object.values(CREDENTIAL_HEADERS)) expect(exported.stdout).not.toContain(value);
  });

  it('export drops headers outside the allowlist from rows stored before it', async () => {
    const d = signDelivery();
    const path = await seeded([d]);
    const file = join(tempDir(), 'old.jsonl');
    const { store, close } = openSqliteStore(path);
    const row = (await store.get(d.eventId))!;
    close();
    writeFileSync(file, exportLine({ ...row, eventId: '2f0c8a1e-5b7d-4c3e-9f1a-0d2e3c4b5a69', signatureT: row.signatureT + 1, headers: { ...row.headers, 'x-auth-token': 'tok-legacy-1f2e' } }));
    const target = dbIn(tempDir());
    expect((await runMain(['import', file], { DATABASE_PATH: target })).code).toBe(0);
    expect((await runMain(['export'], { DATABASE_PATH: target })).stdout).not.toContain('tok-legacy-1f2e');
  });
});

describe('podhook export --out', () => {
  it('creates the file owner-only', async () => {
    const path = await seeded();
    const out = join(tempDir(), 'new.jsonl');
    expect((await runMain(['export', '--out', out], { DATABASE_PATH: path })).code).toBe(0);
    expect(statSync(out).mode & 0o777).toBe(0o600);
  });

  it('refuses an existing file unless --force, which makes it owner-only', async () => {
    const path = await seeded();
    const out = join(tempDir(), 'existing.jsonl');
    writeFileSync(out, 'keep me\n', { mode: 0o644 });
    const refused = await runMain(['export', '--out', out], { DATABASE_PATH: path });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`${out} exists`);
    expect(readFileSync(out, 'utf8')).toBe('keep me\n');
    const forced = await runMain(['export', '--out', out, '--force'], { DATABASE_PATH: path });
    expect(forced.code).toBe(0);
    expect(readFileSync(out, 'utf8')).toContain('podhook.delivery.v1');
    expect(statSync(out).mode & 0o777).toBe(0o600);
  });

  it('never follows a symlink, even with --force', async () => {
    const path = await seeded();
    const dir = tempDir();
    const victim = join(dir, 'victim.txt');
    writeFileSync(victim, 'untouched\n', { mode: 0o644 });
    const link = join(dir, 'link.jsonl');
    symlinkSync(victim, link);
    for (const args of [['--out', link], ['--out', link, '--force']]) {
      const result = await runMain(['export', ...args], { DATABASE_PATH: path });
      expect(result.code).toBe(1);
      expect(result.stderr).toContain('symlink');
    }
    expect(readFileSync(victim, 'utf8')).toBe('untouched\n');
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
  });
});

describe('podhook import', () => {
  it('stores the rows before a malformed line, then exits 1 naming the line', async () => {
    const deliveries = Array.from({ length: 150 }, (_, i) => signDelivery({ t: FIXED_NOW_MS / 1000 + i }));
    const path = await seeded(deliveries);
    const file = join(tempDir(), 'all.jsonl');
    expect((await runMain(['export', '--out', file], { DATABASE_PATH: path })).code).toBe(0);
    const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
    lines.splice(120, 0, '{"format":"podhook.delivery.v1","event_id":"nope"}');
    writeFileSync(file, `${lines.join('\n')}\n`);
    const target = dbIn(tempDir());
    const result = await runMain(['import', file], { DATABASE_PATH: target });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`${file}, line 121`);
    const { store, close } = openSqliteStore(target);
    expect(await store.list({ limit: 1000 })).toHaveLength(120);
    close();
  });
});

describe('tables escape control characters in stored values', () => {
  it('deliveries, replay and secrets print \\x1b and newlines escaped', async () => {
    const evil = 'pod.\u001b[2J\u001b]0;pwned\u0007\nfake-row';
    const d = signDelivery();
    const path = await seeded([d]);
    // As an import would store it: the type and last error come from a file, not from headers.
    const { store: seeder, close: closeSeeder } = openSqliteStore(path);
    const row = (await seeder.get(d.eventId))!;
    await seeder.importDeliveries([{ ...row, eventId: '6d1c2b3a-4e5f-4a6b-8c7d-9e0f1a2b3c4d', eventType: evil, lastError: 'boom\u001b[31m', signatureT: row.signatureT + 1, contentDigest: new Uint8Array(32) }]);
    closeSeeder();
    const listed = await runMain(['deliveries'], { DATABASE_PATH: path });
    expect(listed.code).toBe(0);
    expect(listed.stdout).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f]/);
    expect(listed.stdout).toContain('pod.\\x1b[2J');
    expect(listed.stdout.split('\n').some((l) => l.startsWith('fake-row'))).toBe(false);
    const replayed = await runMain(['replay', '6d1c2b3a-4e5f-4a6b-8c7d-9e0f1a2b3c4d', '--dry-run'], { DATABASE_PATH: path });
    expect(replayed.stdout).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f]/);
    expect(replayed.stdout).toContain('pod.\\x1b[2J');

    const { store, close } = openSqliteStore(path);
    await store.addSecret({ id: 'sec_1', webhookId: null, url: 'https://x.test/\u001b[31mred', eventTypes: null, secret: 's'.repeat(32), fingerprint: 'fp1', createdAt: FIXED_NOW_MS });
    close();
    const secrets = await runMain(['secrets', 'list'], { DATABASE_PATH: path });
    expect(secrets.stdout).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f]/);
    expect(secrets.stdout).toContain('\\x1b[31mred');
  });
});

describe('send reports a quarantined answer', () => {
  it('as "200 quarantined (conflict)"', async () => {
    const path = await seeded();
    const file = join(tempDir(), 'one.jsonl');
    await runMain(['export', '--out', file], { DATABASE_PATH: path });
    const target = openNodeTarget(tempDir(), { secrets: [TEST_SECRET] });
    closers.push(async () => target.close());
    const server = createServer(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const answer = await target.fetch(new Request('http://x/webhooks', { method: 'POST', headers: req.headers as Record<string, string>, body: Buffer.concat(chunks) }));
      res.writeHead(answer.status, { 'content-type': 'application/json' });
      res.end(await answer.text());
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    closers.push(() => new Promise((resolve) => server.close(() => resolve())));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`;
    expect((await runMain(['send', '--to', url, '--secret', TEST_SECRET, file], {})).stdout).toContain('200 new  1');
    // The same event id under another type: a conflict.
    const lines = readFileSync(file, 'utf8').replace('"event_type":"pod.created"', '"event_type":"pod.destroyed"');
    writeFileSync(file, lines);
    expect((await runMain(['send', '--to', url, '--secret', TEST_SECRET, file], {})).stdout).toContain('200 quarantined (conflict)  1');
  });
});

describe('send and trigger follow no redirect', () => {
  async function redirecting(): Promise<string> {
    const server: Server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(307, { location: 'http://127.0.0.1:9/elsewhere' });
        res.end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    closers.push(() => new Promise((resolve) => server.close(() => resolve())));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`;
  }

  it('trigger reports a 307 as a redirect and exits 1', async () => {
    const url = await redirecting();
    const result = await runMain(['trigger', 'pod.created', '--to', url, '--secret', TEST_SECRET], {});
    expect(result.code).toBe(1);
    expect(result.stdout + result.stderr).toContain('307 redirect to http://127.0.0.1:9/elsewhere (not followed)');
    expect(result.stderr).not.toContain('ArrayBuffer');
  });

  it('send reports a 307 as a redirect and exits 1', async () => {
    const path = await seeded();
    const file = join(tempDir(), 'one.jsonl');
    await runMain(['export', '--out', file], { DATABASE_PATH: path });
    const url = await redirecting();
    const result = await runMain(['send', '--to', url, '--secret', TEST_SECRET, file], {});
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('307 redirect to http://127.0.0.1:9/elsewhere (not followed)  1');
  });
});
