import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { EVENT_TYPES } from '../../src/core/events/event-types.js';
import { parseConfig } from '../../src/core/config.js';
import { startServer, type RunningServer } from '../../src/node/serve.js';
import { handlers } from '../fixtures/recording-handlers.js';
import { captureLogger } from '../helpers/capture-logger.js';
import { TEST_SECRET } from '../helpers/sign.js';
import { dbIn, useTempDir } from '../helpers/temp-dir.js';
import { runMain } from './run-main.js';
import { generatePayloadModule, inferShapes, type PayloadShapes } from '../../src/core/shapes/index.js';
import { learnedShapes } from '../fixtures/shapes/learned-samples.js';

const tempDir = useTempDir();
const servers: RunningServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close(100);
});

/** `podhook serve` in this process: fixture handlers (one takes every type), dispatch on, a real port on 127.0.0.1. */
async function receiver(env: Record<string, string> = { SVC_WEBHOOK_SECRET: TEST_SECRET }, shapes?: PayloadShapes) {
  const databasePath = dbIn(tempDir());
  const log = captureLogger();
  const config = parseConfig({ DATABASE_PATH: databasePath, PORT: '0', HOST: '127.0.0.1', WEBHOOK_PATH: '/hooks/pods', ...env });
  const server = await startServer({ config, logger: log.logger, handlers, payloads: shapes && { shapes } });
  servers.push(server);
  // What `trigger` reads to find the local receiver without --to.
  const local = { PORT: String(server.port), WEBHOOK_PATH: '/hooks/pods', DATABASE_PATH: databasePath };
  return { server, log, local, url: `${server.url}/hooks/pods` };
}

/** A generated payload module, written where trigger can read it. */
function payloadModule(shapes: PayloadShapes): string {
  const path = join(tempDir(), '_payloads.ts');
  writeFileSync(path, generatePayloadModule(shapes));
  return path;
}

describe('podhook trigger', () => {
  it('sends a signed default payload of each of the 11 types to the local receiver, and each is processed', async () => {
    const { server, log, local } = await receiver();
    // A module that learned nothing (podhook's tests do not read the team's handlers/_payloads.ts).
    const nothingLearned = payloadModule(inferShapes([]));
    const ids: string[] = [];
    for (const type of EVENT_TYPES) {
      const result = await runMain(['trigger', type, '--payloads', nothingLearned], { ...local, SVC_WEBHOOK_SECRET: TEST_SECRET });
      expect(result.code, result.stderr).toBe(0);
      expect(result.stderr).toBe(`podhook trigger: the default ${type} payload (${nothingLearned} has no shape learned for it)\n`);
      const [head, answer] = result.stdout.split('\n') as [string, string];
      expect(head).toMatch(new RegExp(`^${type.replace(/\./g, '\\.')} [0-9a-f-]{36} → http://127\\.0\\.0\\.1:${server.port}/hooks/pods$`));
      expect(answer).toMatch(/^200 new: \{"received":true,.*"duplicate":false\}$/);
      ids.push(head.split(' ')[1]!);
    }
    await vi.waitFor(async () => expect((await server.runtime.store.list({ status: 'processed' })), 'all 11 processed').toHaveLength(11), { timeout: 10_000 });
    for (const [i, id] of ids.entries()) {
      const row = (await server.runtime.store.get(id))!;
      expect(row).toMatchObject({ eventType: EVENT_TYPES[i], status: 'processed', lastError: null });
      const payload = JSON.parse(Buffer.from(row.body).toString('utf8')) as { pod: { id: string; status: string } };
      expect(payload.pod.id).toMatch(/^[0-9a-f-]{36}$/);
    }
    // The catch-all fixture handler ran once on each type, and succeeded.
    const runs = log.records().filter((r) => r.msg === 'handler run' && r.handler === 'recordAll');
    expect(runs).toHaveLength(11);
    expect(runs.every((r) => r.outcome === 'succeeded')).toBe(true);
    expect(new Set(runs.map((r) => r.event_type))).toEqual(new Set(EVENT_TYPES));
  });

  it('builds the payload from the learned shape: it fits (no drift at the door) and is processed', async () => {
    const shapes = learnedShapes();
    const { server, local } = await receiver({ SVC_WEBHOOK_SECRET: TEST_SECRET }, shapes);
    const module = payloadModule(shapes);
    const result = await runMain(['trigger', 'pod.created', '--payloads', module], { ...local, SVC_WEBHOOK_SECRET: TEST_SECRET });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toBe(`podhook trigger: a payload made from the pod.created shape in ${module} (learned from 24 samples)\n`);
    const id = result.stdout.split(' ')[1]!;
    await vi.waitFor(async () => expect((await server.runtime.store.get(id))?.status).toBe('processed'), { timeout: 5000 });
    const row = (await server.runtime.store.get(id))!;
    const payload = JSON.parse(Buffer.from(row.body).toString('utf8')) as { pod: { id: string; status: string; tier: string }; occurred_at: string };
    expect(payload.pod).toMatchObject({ status: 'active', tier: 'starter' });
    expect(payload.pod.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(Date.parse(payload.occurred_at)).toBeGreaterThan(Date.now() - 60_000);
    // The drift checks run in arrival order after each answer: once a later delivery that does
    // not fit has its drift recorded, this one's check has run, and recorded nothing.
    const misfit = randomUUID();
    const late = await runMain(['trigger', 'pod.created', '--to', `${server.url}/hooks/pods`, '--secret', TEST_SECRET, '--id', misfit, '--data', '{"other":true}'], {});
    expect(late.code, late.stderr).toBe(0);
    await vi.waitFor(async () => expect((await server.runtime.store.get(misfit))?.drift, 'the later delivery\'s drift').toBeDefined(), { timeout: 5000 });
    expect((await server.runtime.store.get(id))!.drift).toBeUndefined();
    // A module that is not one podhook schemas wrote is a usage error.
    const bad = join(tempDir(), 'bad.ts');
    writeFileSync(bad, 'export const x = 1;\n');
    expect((await runMain(['trigger', 'pod.created', '--payloads', bad], { ...local, SVC_WEBHOOK_SECRET: TEST_SECRET })).code).toBe(2);
  });

  it('sends --data byte for byte under --id; the same id again is a duplicate', async () => {
    const { server, url } = await receiver();
    const file = join(tempDir(), 'payload.json');
    const bytes = '{ "pod": { "id": "p-1" },\n  "amount": 1.50 }\n';
    writeFileSync(file, bytes);
    const id = randomUUID();
    const first = await runMain(['trigger', 'pod.renewed', '--to', url, '--secret', TEST_SECRET, '--id', id, '--data', `@${file}`], {});
    expect(first.code).toBe(0);
    expect(Buffer.from((await server.runtime.store.get(id))!.body).toString('utf8')).toBe(bytes);
    const again = await runMain(['trigger', 'pod.renewed', '--to', url, '--secret', TEST_SECRET, '--id', id, '--data', '{"other":true}'], {});
    expect(again.stdout).toContain(`200 duplicate: {"received":true,"event_id":"${id}","duplicate":true}`);
  });

  it('signs with the secret stored in the database when none is configured', async () => {
    const { server, local } = await receiver({});
    await server.runtime.store.addSecret({ id: randomUUID(), webhookId: null, url: null, eventTypes: null, secret: 'stored-secret', fingerprint: 'fp-stored', createdAt: 1 });
    const result = await runMain(['trigger', 'pod.active'], local);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('200 new');
  });

  it('exits 1 on a refusal or no receiver, and 2 on bad usage', async () => {
    const { url } = await receiver();
    const refused = await runMain(['trigger', 'pod.created', '--to', url, '--secret', 'wrong'], {});
    expect(refused.code).toBe(1);
    expect(refused.stdout).toContain('401 unauthorized: {"error":{"code":"unauthorized"');

    const closed = servers.pop()!;
    await closed.close(100);
    const down = await runMain(['trigger', 'pod.created', '--to', url, '--secret', TEST_SECRET], {});
    expect(down.code).toBe(1);
    expect(down.stderr).toContain(`no answer from ${url} (ECONNREFUSED)`);

    const usage = [['pod.unknown'], [], ['pod.created', 'pod.active'], ['pod.created', '--id', 'nope'], ['pod.created', '--data', '{not json'], ['pod.created', '--data', '@/no/such/file']];
    for (const args of usage) {
      const r = await runMain(['trigger', ...args, '--to', url, '--secret', TEST_SECRET], {});
      expect(r.code, args.join(' ')).toBe(2);
    }
    expect((await runMain(['trigger', 'pod.created', '--to', url], { DATABASE_PATH: dbIn(tempDir()) })).stderr).toContain('no signing secret');
  });
});
