import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, inject, it, vi } from 'vitest';
import { openPostgres } from '../../src/store/postgres/open-postgres.js';
import { createPostgresStore } from '../../src/store/postgres/open-postgres.js';
import { freePort } from '../helpers/free-port.js';
import { freshDatabaseUrl } from '../helpers/postgres.js';
import { openDoor } from '../helpers/tcp-door.js';
import { signDelivery, TEST_SECRET, type SignedDelivery } from '../helpers/sign.js';
import { RECORDING_REGISTRY } from '../fixtures/registry-paths.js';
import { runCli, spawnServer, type ServerProcess } from '../helpers/spawn-podhook.js';

const STALLING = fileURLToPath(new URL('../fixtures/stalling-handlers.ts', import.meta.url));
const running: ServerProcess[] = [];
const cleanups: (() => Promise<unknown> | void)[] = [];

afterEach(async () => {
  for (const s of running.splice(0)) {
    if (s.child.exitCode === null && s.child.signalCode === null) {
      s.child.kill('SIGTERM');
      await once(s.child, 'close');
    }
  }
  for (const c of cleanups.splice(0)) await c();
});

const now = () => signDelivery({ t: Math.floor(Date.now() / 1000) });
const post = (url: string, d: SignedDelivery) => fetch(`${url}/webhooks`, { method: 'POST', headers: d.headers, body: d.body });
const passwordOf = (url: string) => decodeURIComponent(new URL(url).password);

async function serve(env: Record<string, string>, handlers = RECORDING_REGISTRY) {
  const server = await spawnServer({ SVC_WEBHOOK_SECRET: TEST_SECRET, DISPATCH_POLL_MS: '50', ...env }, { handlers });
  running.push(server);
  return server;
}

async function openStore(url: string) {
  const opened = openPostgres(url);
  cleanups.push(() => opened.close());
  return createPostgresStore(opened.db);
}

describe('podhook serve on PostgreSQL (DATABASE_URL)', () => {
  it('stores a signed delivery, dedupes its copy, runs the handler; the log names the store and never the password', async () => {
    const url = await freshDatabaseUrl();
    const server = await serve({ DATABASE_URL: url, DATABASE_PATH: '/nonexistent/ignored.db' });
    const listening = server.output().split('\n').find((l) => l.includes('"msg":"listening"'))!;
    expect(JSON.parse(listening)).toMatchObject({ store: 'postgres', database: `postgres://podhook@${new URL(url).host}${new URL(url).pathname}` });

    await vi.waitFor(async () => expect((await fetch(`${server.url}/readyz`)).status).toBe(200), { timeout: 10_000 });
    const d = now();
    const first = await post(server.url, d);
    expect(first.status).toBe(200);
    expect(await first.json()).toMatchObject({ received: true, duplicate: false });
    const again = await post(server.url, d);
    expect(await again.json()).toMatchObject({ received: true, duplicate: true });

    const store = await openStore(url);
    await vi.waitFor(async () => expect(await store.get(d.eventId)).toMatchObject({ status: 'processed', deliveryCount: 2 }), { timeout: 10_000 });
    // The handler ran once for the two copies (a first success leaves no ledger rows).
    // Log lines reach the pipe a moment after the row commits.
    await vi.waitFor(() => expect(server.output()).toContain('"recorded":true'), { timeout: 5000 });
    expect(server.output().match(/"recorded":true/g)).toHaveLength(1);
    expect(await store.get(d.eventId)).toMatchObject({ attempts: 1 });
    expect(server.output()).not.toContain(passwordOf(url));
  });

  it('stores one event id sent to two replicas at once once: exactly one answer has duplicate: false', async () => {
    const url = await freshDatabaseUrl();
    const [a, b] = await Promise.all([serve({ DATABASE_URL: url }), serve({ DATABASE_URL: url })]);
    await vi.waitFor(async () => {
      expect((await fetch(`${a!.url}/readyz`)).status).toBe(200);
      expect((await fetch(`${b!.url}/readyz`)).status).toBe(200);
    }, { timeout: 15_000 });
    const store = await openStore(url);
    for (let i = 0; i < 10; i++) {
      const d = now();
      const answers = await Promise.all([post(a!.url, d), post(b!.url, d)]);
      expect(answers.map((r) => r.status)).toEqual([200, 200]);
      const bodies = (await Promise.all(answers.map((r) => r.json()))) as { duplicate: boolean }[];
      expect(bodies.filter((x) => !x.duplicate)).toHaveLength(1);
      expect(await store.get(d.eventId)).toMatchObject({ deliveryCount: 2 });
    }
    expect((await store.list({ limit: 100 })).length).toBe(10);
  });

  it('wakes an idle replica through LISTEN/NOTIFY when another replica stores work (its poll is an hour)', async () => {
    const url = await freshDatabaseUrl();
    const ingestOnly = await serve({ DATABASE_URL: url, DISPATCHER: 'off' });
    const worker = await serve({ DATABASE_URL: url, DISPATCH_POLL_MS: '3600000' });
    await vi.waitFor(async () => {
      expect((await fetch(`${ingestOnly.url}/readyz`)).status).toBe(200);
      expect((await fetch(`${worker.url}/readyz`)).status).toBe(200);
      expect(worker.output()).toContain('store ready');
    }, { timeout: 15_000 });
    const store = await openStore(url);
    for (let i = 0; i < 3; i++) {
      const d = now();
      expect((await post(ingestOnly.url, d)).status).toBe(200);
      await vi.waitFor(async () => expect(await store.get(d.eventId)).toMatchObject({ status: 'processed' }), { timeout: 10_000, interval: 50 });
    }
    await vi.waitFor(() => expect(worker.output().match(/"recorded":true/g)).toHaveLength(3), { timeout: 5000 });
    expect(ingestOnly.output()).not.toContain('"recorded":true');
  });

  it('runs on a live replica the work of one killed with SIGKILL mid-handler, once its lease runs out', async () => {
    const url = await freshDatabaseUrl();
    // A short LEASE_MS keeps the test short.
    const stuck = await serve({ DATABASE_URL: url, LEASE_MS: '1000', STALL_HANDLERS: '1' }, STALLING);
    const live = await serve({ DATABASE_URL: url, LEASE_MS: '1000', DISPATCH_POLL_MS: '100' }, STALLING);
    await vi.waitFor(async () => expect((await fetch(`${stuck.url}/readyz`)).status).toBe(200), { timeout: 15_000 });
    const d = now();
    expect((await post(stuck.url, d)).status).toBe(200);
    await vi.waitFor(() => expect(stuck.output()).toContain(`"stalled":"${d.eventId}"`), { timeout: 10_000 });
    stuck.child.kill('SIGKILL');
    await once(stuck.child, 'close');
    const store = await openStore(url);
    await vi.waitFor(async () => expect(await store.get(d.eventId)).toMatchObject({ status: 'processed' }), { timeout: 20_000, interval: 100 });
    // Log lines reach the pipe a moment after the row commits.
    await vi.waitFor(() => expect(live.output()).toContain(`"recorded":"${d.eventId}"`), { timeout: 5000 });
    expect(live.output().split(`"recorded":"${d.eventId}"`)).toHaveLength(2);
  });

  it('accepts a secret added with `podhook secrets add` on a running replica without a restart', async () => {
    const url = await freshDatabaseUrl();
    const server = await serve({ DATABASE_URL: url });
    await vi.waitFor(async () => expect((await fetch(`${server.url}/readyz`)).status).toBe(200), { timeout: 10_000 });
    const secret = 'whsec_added_later_8d1e2f';
    const d = signDelivery({ t: Math.floor(Date.now() / 1000), secret });
    expect((await post(server.url, d)).status).toBe(401);
    const added = await runCli(['secrets', 'add'], { DATABASE_URL: url }, `${secret}\n`);
    expect(added.code).toBe(0);
    expect(added.stdout + added.stderr).not.toContain(passwordOf(url));
    await vi.waitFor(async () => expect((await post(server.url, d)).status).toBe(200), { timeout: 5000, interval: 100 });
    const listed = await runCli(['deliveries', '--json'], { DATABASE_URL: url });
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain(d.eventId);
    expect(listed.stdout + listed.stderr).not.toContain(passwordOf(url));
  });

  it('answers 503 on /readyz and ingest while PostgreSQL is unreachable, then stores once it is reachable', async () => {
    const target = new URL(inject('postgresAdminUrl'));
    const url = new URL(await freshDatabaseUrl());
    // A TCP door in front of the server, closed until the test opens it.
    const port = await freePort();
    url.port = String(port);
    const server = await serve({ DATABASE_URL: url.href });
    const d = now();
    const refused = await post(server.url, d);
    expect(refused.status).toBe(503);
    expect((await fetch(`${server.url}/readyz`)).status).toBe(503);
    const proxy = await openDoor(port, Number(target.port));
    cleanups.push(() => proxy.close());
    await vi.waitFor(async () => expect((await fetch(`${server.url}/readyz`)).status).toBe(200), { timeout: 15_000, interval: 100 });
    const stored = await post(server.url, d);
    expect(await stored.json()).toMatchObject({ duplicate: false });
    expect(server.output()).toContain('PostgreSQL not reachable; retrying');
    expect(server.output()).not.toContain(passwordOf(url.href));
  });

  it('refuses a malformed DATABASE_URL with exit 2 naming the variable, never echoing it', async () => {
    for (const args of [['serve'], ['deliveries'], ['secrets', 'list']]) {
      const result = await runCli(args, { DATABASE_URL: 'mysql://u:pw-s3cr3t@host/db' });
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('DATABASE_URL');
      expect(result.stdout + result.stderr).not.toContain('pw-s3cr3t');
    }
  });

  it('fails a CLI command on an unreachable PostgreSQL with exit 1 and no password in the message', async () => {
    const url = `postgres://podhook:pw-hidden-42@127.0.0.1:${await freePort()}/nothing`;
    const result = await runCli(['deliveries'], { DATABASE_URL: url });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('postgres://podhook@127.0.0.1');
    expect(result.stdout + result.stderr).not.toContain('pw-hidden-42');
  });
});
