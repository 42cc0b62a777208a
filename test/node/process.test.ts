import { once } from 'node:events';
import { describe, expect, it, vi } from 'vitest';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { signDelivery, TEST_SECRET } from '../helpers/sign.js';
import { runCli, spawnServer } from '../helpers/spawn-podhook.js';
import { dbIn, useTempDir } from '../helpers/temp-dir.js';

const tempDir = useTempDir();
const nowS = () => Math.floor(Date.now() / 1000);

describe('podhook serve as a process', () => {
  it('keeps every acknowledged delivery after kill -9', async () => {
    const path = dbIn(tempDir());
    const server = await spawnServer({ DATABASE_PATH: path, SVC_WEBHOOK_SECRET: TEST_SECRET });
    const acked: string[] = [];
    let stop = false;
    // Keep 16 senders busy, then kill the process while requests are in flight.
    const senders = Array.from({ length: 16 }, async () => {
      while (!stop) {
        const d = signDelivery({ t: nowS() });
        try {
          const res = await fetch(`${server.url}/webhooks`, { method: 'POST', headers: d.headers, body: d.body });
          if (res.status === 200) acked.push(d.eventId);
        } catch {
          return; // the connection died with the process
        }
      }
    });
    // Kill while requests are in flight, once enough were acknowledged to make the check meaningful.
    await vi.waitFor(() => expect(acked.length, '25 acknowledged deliveries').toBeGreaterThanOrEqual(25), { timeout: 15_000 });
    server.child.kill('SIGKILL');
    stop = true;
    await once(server.child, 'exit');
    await Promise.all(senders);
    expect(acked.length).toBeGreaterThan(20);

    const { store, close } = openSqliteStore(path);
    const stored = new Set((await store.list({ limit: 1_000_000 })).map((d) => d.eventId));
    expect(acked.filter((id) => !stored.has(id))).toEqual([]);
    close();
  });

  it('stops gracefully on SIGTERM with exit code 0, every log line written', async () => {
    const server = await spawnServer({ DATABASE_PATH: dbIn(tempDir()), SVC_WEBHOOK_SECRET: TEST_SECRET });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const d = signDelivery({ t: nowS() });
      expect((await fetch(`${server.url}/webhooks`, { method: 'POST', headers: d.headers, body: d.body })).status).toBe(200);
      ids.push(d.eventId);
    }
    // At once: the lines are still in the logger's buffer, which the exit must write.
    server.child.kill('SIGTERM');
    // 'close', not 'exit': the child's last writes may still be in the pipe when it has exited.
    const [code] = await once(server.child, 'close');
    expect(code).toBe(0);
    const lines = server.output().split('\n').filter((l) => l.startsWith('{'));
    const logged = lines.map((l) => JSON.parse(l) as { msg: string; event_id?: string });
    expect(logged.filter((l) => l.msg === 'delivery').map((l) => l.event_id)).toEqual(ids);
    expect(logged.at(-1)?.msg).toBe('stopped');
  });

  it.each([
    ['PORT', 'eighty'],
    ['PORT', '70000'],
    ['MAX_BODY_BYTES', '-1'],
    ['LOG_LEVEL', 'loud'],
    ['WEBHOOK_PATH', 'hooks'],
    ['RETENTION_DAYS', '1'],
  ])('refuses %s=%s at start with one line naming the variable (exit 2)', async (name, value) => {
    const result = await runCli(['serve'], { DATABASE_PATH: dbIn(tempDir()), [name]: value });
    expect(result.code).toBe(2);
    const lines = result.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(new RegExp(`^podhook: invalid configuration: ${name} `));
  });

  it('starts without a secret, reports not ready and refuses deliveries', async () => {
    const server = await spawnServer({ DATABASE_PATH: dbIn(tempDir()) });
    try {
      const ready = await fetch(`${server.url}/readyz`);
      expect(ready.status).toBe(503);
      const d = signDelivery({ t: nowS() });
      expect((await fetch(`${server.url}/webhooks`, { method: 'POST', headers: d.headers, body: d.body })).status).toBe(503);
    } finally {
      server.child.kill('SIGTERM');
      await once(server.child, 'exit');
    }
  });
});

describe('podhook deliveries', () => {
  it('lists what `podhook serve` accepted, newest first, as JSON', { timeout: 40_000 }, async () => {
    const path = dbIn(tempDir());
    const server = await spawnServer({ DATABASE_PATH: path, SVC_WEBHOOK_SECRET: TEST_SECRET });
    const first = signDelivery({ t: nowS(), eventType: 'pod.created' });
    const second = signDelivery({ t: nowS(), eventType: 'pod.backup.failed' });
    for (const d of [first, second, first]) {
      expect((await fetch(`${server.url}/webhooks`, { method: 'POST', headers: d.headers, body: d.body })).status).toBe(200);
    }
    // The CLI reads the file while the server runs (WAL); wait for the handlers to have run.
    let result = await runCli(['deliveries', '--json'], { DATABASE_PATH: path });
    await vi.waitFor(async () => {
      result = await runCli(['deliveries', '--json'], { DATABASE_PATH: path });
      expect((JSON.parse(result.stdout) as { status: string }[]).every((r) => r.status === 'processed')).toBe(true);
    }, { timeout: 15_000 });
    server.child.kill('SIGTERM');
    await once(server.child, 'exit');

    expect(result.code).toBe(0);
    const rows = JSON.parse(result.stdout) as Record<string, unknown>[];
    expect(rows.map((r) => r.event_id)).toEqual([second.eventId, first.eventId]);
    expect(rows[1]).toMatchObject({ event_type: 'pod.created', status: 'processed', attempts: 1, delivery_count: 2, last_error: null });
    expect(new Date(rows[1]!.received_at as string).getTime()).toBeGreaterThan(0);

    const filtered = await runCli(['deliveries', '--json', '--type', 'pod.backup.failed'], { DATABASE_PATH: path });
    expect(JSON.parse(filtered.stdout).map((r: { event_id: string }) => r.event_id)).toEqual([second.eventId]);
    const table = await runCli(['deliveries', '--limit', '1'], { DATABASE_PATH: path });
    expect(table.stdout).toContain(second.eventId);
    expect(table.stdout).not.toContain(first.eventId);
  });

  it('says so when there is no database, and refuses a bad status', async () => {
    const missing = await runCli(['deliveries'], { DATABASE_PATH: dbIn(tempDir()) + '.missing' });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/no database at/);
    const bad = await runCli(['deliveries', '--status', 'done'], {});
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--status must be one of/);
  });

  it('has --help on every command', async () => {
    for (const command of ['serve', 'deliveries']) {
      const result = await runCli([command, '--help']);
      expect(result.code).toBe(0);
      expect(result.stdout).toMatch(new RegExp(`Usage: podhook ${command}`));
      expect(result.stdout).toMatch(/Exit codes/);
    }
    const top = await runCli(['--help']);
    expect(top.stdout).toMatch(/Commands:/);
  });
});
