import { chmodSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { validateWebhookUrl } from '../../src/service-api/validate-webhook-url.js';
import { REQUEST_ID_PATTERN } from '../../src/http/request-id.js';
import { SECRET_NOTE } from '../../src/emulator/create-service-emulator.js';
import { startEmulator, type RunningEmulator, type StartEmulatorOptions } from '../../src/emulator/start-emulator.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { EMPTY_REGISTRY, PARTIAL_REGISTRY } from '../fixtures/registry-paths.js';
import { ACCEPTED_URLS, REFUSED_URLS } from '../fixtures/webhook-urls.js';
import { captureLogger } from '../helpers/capture-logger.js';
import { signDelivery } from '../helpers/sign.js';
import { runCli, spawnServer } from '../helpers/spawn-podhook.js';
import { dbIn, useTempDir } from '../helpers/temp-dir.js';
import { runMain } from './run-main.js';

const KEY = 'svc_live_key_for_tests_0123';
const SECRET = 'whsec_register_test_5b1d0c77e2a94f3c';
const URL_OK = 'https://hooks.example.com/webhooks';
const tempDir = useTempDir();
const nowS = () => Math.floor(Date.now() / 1000);

const running: RunningEmulator[] = [];
afterEach(async () => {
  for (const r of running.splice(0)) await r.close();
});

/** The emulator on a real port, recording every /pods/v1 request it gets. */
async function service(options: Partial<StartEmulatorOptions> = {}) {
  const requests: { headers: Headers; body: string }[] = [];
  const pending: Promise<void>[] = [];
  const log = captureLogger();
  const emu = await startEmulator({
    apiKey: KEY,
    generateSecret: () => SECRET,
    logger: log.logger,
    onRequest: (request) => void pending.push(request.text().then((body) => void requests.push({ headers: request.headers, body }))),
    ...options,
  });
  running.push(emu);
  return { emu, log, requests: async () => (await Promise.all(pending), requests) };
}

function envFor(emu: RunningEmulator, db: string, extra: Record<string, string> = {}) {
  return { SVC_API_KEY: KEY, SVC_BASE_URL: emu.url, DATABASE_PATH: db, ...extra };
}

describe('podhook register: the request', () => {
  it('sends exactly X-API-Key, JSON, a fresh x-request-id and the body {url, event_types}', async () => {
    const { emu, requests } = await service();
    const result = await runMain(['register', '--url', URL_OK, '--events', 'pod.created, pod.backup.failed,pod.created'], envFor(emu, dbIn(tempDir())));
    expect(result.code).toBe(0);
    const [request] = await requests();
    const transport = new Set(['host', 'connection', 'content-length', 'accept-encoding', 'accept-language', 'sec-fetch-mode']);
    const sent = Object.fromEntries([...request!.headers].filter(([name]) => !transport.has(name)));
    expect(Object.keys(sent).sort()).toEqual(['accept', 'content-type', 'user-agent', 'x-api-key', 'x-request-id']);
    expect(sent).toMatchObject({ 'x-api-key': KEY, 'content-type': 'application/json', accept: 'application/json', 'user-agent': 'podhook-cli' });
    expect(sent['x-request-id']).toMatch(/^podhook-[0-9a-f-]{36}$/);
    expect(sent['x-request-id']).toMatch(REQUEST_ID_PATTERN);
    expect(request!.body).toBe(JSON.stringify({ url: URL_OK, event_types: ['pod.created', 'pod.backup.failed'] }));
  });

  it('omits event_types without --events and says every event is sent', async () => {
    const { emu, requests } = await service();
    const result = await runMain(['register', '--url', URL_OK], envFor(emu, dbIn(tempDir())));
    expect(result.code).toBe(0);
    expect((await requests())[0]!.body).toBe(JSON.stringify({ url: URL_OK }));
    expect(result.stdout).toMatch(/event types +every event \(event_types omitted/);
  });

  it('sends the types the registry handles with --only-handled, and prints them', async () => {
    const { emu, requests } = await service();
    const result = await runMain(['register', '--url', URL_OK, '--only-handled', '--handlers', PARTIAL_REGISTRY], envFor(emu, dbIn(tempDir())));
    expect(result.code, result.stderr).toBe(0);
    const handled = ['pod.created', 'pod.backup.completed', 'pod.backup.failed'];
    expect(JSON.parse((await requests())[0]!.body)).toEqual({ url: URL_OK, event_types: handled });
    expect(result.stderr).toContain(`--only-handled: subscribing to the 3 handled type(s): ${handled.join(', ')}`);
  });

  it('refuses --only-handled when no handler takes any type, sending nothing', async () => {
    const { emu, requests } = await service();
    const result = await runMain(['register', '--url', URL_OK, '--only-handled', '--handlers', EMPTY_REGISTRY], envFor(emu, dbIn(tempDir())));
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('no handler module takes any event type');
    expect(await requests()).toEqual([]);
  });

  it.each(ACCEPTED_URLS)('sends %j as %s', async (input, normalised) => {
    const { emu, requests } = await service();
    const result = await runMain(['register', '--url', input], envFor(emu, dbIn(tempDir())));
    expect(result.code).toBe(0);
    expect(JSON.parse((await requests())[0]!.body).url).toBe(normalised);
  });

  it.each(REFUSED_URLS)('refuses %j before sending (%s), exit 2', async (input, problem) => {
    const { emu, requests } = await service();
    const result = await runMain(['register', '--url', input], envFor(emu, dbIn(tempDir())));
    expect(result.code).toBe(2);
    const verdict = validateWebhookUrl(input);
    expect(verdict).toMatchObject({ ok: false, problem });
    expect(result.stderr).toBe(`podhook register: not sent: url: ${verdict.ok || verdict.message} (see podhook register --help)\n`);
    expect(await requests()).toEqual([]);
  });

  it.each([
    [['--events', ''], /event_types must not be empty/],
    [['--events', ' , '], /event_types must not be empty/],
    [['--events', 'pod.created,pod.moved'], /unknown event type "pod.moved" \(allowed: pod.created, /],
    [['--events', 'pod.created', '--only-handled'], /cannot be used together/],
    [['--handlers', 'x.ts'], /--handlers is only used with --only-handled/],
    [[], /--url is required/],
  ])('refuses %j before sending, exit 2', async (args, message) => {
    const { emu, requests } = await service();
    const result = await runMain(['register', ...(args.length === 0 ? [] : ['--url', URL_OK]), ...args], envFor(emu, dbIn(tempDir())));
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(message);
    expect(await requests()).toEqual([]);
  });

  it('refuses a missing API key before any request, saying where keys are minted', async () => {
    const { emu, requests } = await service();
    for (const key of [undefined, '', '   ']) {
      const env: Record<string, string> = envFor(emu, dbIn(tempDir()));
      if (key === undefined) delete env.SVC_API_KEY;
      else env.SVC_API_KEY = key;
      const result = await runMain(['register', '--url', URL_OK], env);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('SVC_API_KEY is not set: create a compute API key in the dashboard, under Settings → API Keys');
    }
    expect(await requests()).toEqual([]);
  });

  it('refuses a missing SVC_BASE_URL, or plain http beyond this machine (the key would travel in clear)', async () => {
    const db = dbIn(tempDir());
    const missing = await runMain(['register', '--url', URL_OK], { SVC_API_KEY: KEY, DATABASE_PATH: db });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('SVC_BASE_URL is not set');
    const clear = await runMain(['register', '--url', URL_OK], { SVC_API_KEY: KEY, DATABASE_PATH: db, SVC_BASE_URL: 'http://compute.example.com' });
    expect(clear.code).toBe(2);
    expect(clear.stderr).toContain('SVC_BASE_URL must be https://');
  });

  it('documents its exit codes in --help', async () => {
    const result = await runMain(['register', '--help'], {});
    expect(result.code).toBe(0);
    for (const line of ['0  registered', '2  bad usage', '3  unauthorized', '4  invalid_request', '5  limit_exceeded', '6  rate_limited', '7  internal', '8  the webhook was created']) {
      expect(result.stdout).toContain(line);
    }
  });
});

describe('podhook register: the service answers (branching on error.code)', () => {
  it('unauthorized: exit 3, says where keys are minted, prints the request id', async () => {
    const { emu, requests } = await service();
    const result = await runMain(['register', '--url', URL_OK], envFor(emu, dbIn(tempDir()), { SVC_API_KEY: 'svc_wrong' }));
    expect(result.code).toBe(3);
    expect(result.stderr).toContain('the service refused SVC_API_KEY (unauthorized)');
    expect(result.stderr).toContain('Settings → API Keys');
    const [request] = await requests();
    expect(result.stderr).toContain(`request id: ${request!.headers.get('x-request-id')}`);
  });

  it('forbidden: exit 1 with the service message', async () => {
    const { emu } = await service();
    emu.emulator.injectFault({ count: 1, status: 403, code: 'forbidden', message: 'This key cannot manage webhooks.' });
    const result = await runMain(['register', '--url', URL_OK], envFor(emu, dbIn(tempDir())));
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('(forbidden): This key cannot manage webhooks.');
    expect(result.stderr).toMatch(/request id: podhook-/);
  });

  it("invalid_request: exit 4 with the service's details (a local URL the real rules refuse)", async () => {
    const { emu } = await service();
    const result = await runMain(['register', '--allow-local-url', '--url', 'http://127.0.0.1:3000/webhooks'], envFor(emu, dbIn(tempDir())));
    expect(result.code).toBe(4);
    expect(result.stderr).toContain('the service refused the request (invalid_request): url: the URL must use https://');
    expect(result.stderr).toContain('details: {"field":"url","problem":"not_https"}');
  });

  it('takes --allow-local-urls (emulate used to spell it so) as --allow-local-url', async () => {
    const { emu, requests } = await service();
    const result = await runMain(['register', '--allow-local-urls', '--url', 'http://127.0.0.1:3000/webhooks'], envFor(emu, dbIn(tempDir())));
    expect(result.code).toBe(4); // checked by the service, not refused locally
    expect(await requests()).toHaveLength(1);
  });

  it('limit_exceeded: exit 5 after 10 webhooks, saying the limit', async () => {
    const { emu } = await service();
    const db = dbIn(tempDir());
    for (let i = 0; i < 10; i++) expect((await runMain(['register', '--url', `${URL_OK}/${i}`], envFor(emu, db))).code).toBe(0);
    const result = await runMain(['register', '--url', `${URL_OK}/10`], envFor(emu, db));
    expect(result.code).toBe(5);
    expect(result.stderr).toContain('10 per account (limit_exceeded)');
  });

  it('rate_limited: waits retry_after_seconds, shows that it waits, then succeeds with a new request id', async () => {
    // The emulator's write bucket and the CLI's waits share one fake clock: no real sleep.
    let now = 1_790_000_000_000;
    const waits: number[] = [];
    const sleep = async (ms: number) => {
      waits.push(ms);
      now += ms;
    };
    const { emu, requests } = await service({ writeLimit: 1, writeWindowMs: 1000, clock: () => now });
    const db = dbIn(tempDir());
    expect((await runMain(['register', '--url', `${URL_OK}/1`], envFor(emu, db))).code).toBe(0);
    const result = await runMain(['register', '--url', `${URL_OK}/2`], envFor(emu, db), { sleep });
    expect(result.code).toBe(0);
    expect(waits).toEqual([1000]);
    expect(result.stderr).toMatch(/rate limited by the service \(request id podhook-[0-9a-f-]+\); waiting 1 s before retry 1 of 3/);
    const ids = (await requests()).map((r) => r.headers.get('x-request-id'));
    expect(new Set(ids).size).toBe(3);
  });

  it('rate_limited: gives up after 3 waits (exit 6), and at once when asked to wait too long', async () => {
    const { emu, requests } = await service();
    emu.emulator.injectFault({ count: 4, status: 429, code: 'rate_limited', message: 'Slow down.', details: { retry_after_seconds: 1 } });
    const waits: number[] = [];
    const bounded = await runMain(['register', '--url', URL_OK], envFor(emu, dbIn(tempDir())), { sleep: async (ms) => void waits.push(ms) });
    expect(bounded.code).toBe(6);
    expect(waits).toEqual([1000, 1000, 1000]);
    expect(bounded.stderr.match(/waiting 1 s before retry/g)).toHaveLength(3);
    expect(bounded.stderr).toContain('still rate limited by the service (rate_limited)');
    expect(await requests()).toHaveLength(4);

    emu.emulator.injectFault({ count: 1, status: 429, code: 'rate_limited', message: 'Slow down.', details: { retry_after_seconds: 600 } });
    const long = await runMain(['register', '--url', URL_OK], envFor(emu, dbIn(tempDir())), { sleep: async (ms) => void waits.push(ms) });
    expect(long.code).toBe(6);
    expect(waits).toHaveLength(3); // not waited out
    expect(long.stderr).toContain('try again in 600 s');
    expect(long.stderr).not.toContain('before retry');
  });

  it('internal: exit 7, no retry, warns the webhook may exist', async () => {
    const { emu, requests } = await service();
    emu.emulator.injectFault({ count: 1 });
    const result = await runMain(['register', '--url', URL_OK], envFor(emu, dbIn(tempDir())));
    expect(result.code).toBe(7);
    expect(result.stderr).toContain('the service failed (internal): the webhook may or may not exist');
    expect(await requests()).toHaveLength(1);
  });

  it('a code the command does not know: exit 1 with the code and message', async () => {
    const { emu } = await service();
    emu.emulator.injectFault({ count: 1, status: 403, code: 'capability_disabled', message: 'Webhooks are off for this account.' });
    const result = await runMain(['register', '--url', URL_OK], envFor(emu, dbIn(tempDir())));
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('(capability_disabled): Webhooks are off for this account.');
  });

  it('network error: exit 7 with a clear message', async () => {
    const { emu } = await service();
    const base = emu.url;
    await emu.close();
    const result = await runMain(['register', '--url', URL_OK], { SVC_API_KEY: KEY, SVC_BASE_URL: base, DATABASE_PATH: dbIn(tempDir()) });
    expect(result.code).toBe(7);
    expect(result.stderr).toContain(`could not reach ${base} (ECONNREFUSED): check SVC_BASE_URL`);
    expect(result.stderr).toMatch(/request id: podhook-[0-9a-f-]+ \(sent; no answer\)/);
  });
});

describe('podhook register: the secret', () => {
  it('prints the webhook, never the secret, and stores it owner-only with the webhook id, url and types', async () => {
    const { emu, log } = await service();
    const dir = tempDir();
    const db = join(dir, 'new', 'podhook.db');
    const result = await runCli(['register', '--url', URL_OK, '--events', 'pod.created,pod.active'], envFor(emu, db));
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^Webhook registered\.\n  id +[0-9a-f-]{36}\n  url +https:\/\/hooks\.example\.com\/webhooks\n  event types +pod\.created, pod\.active\n  enabled +yes\n/);
    expect(result.stdout).toContain(`note          ${SECRET_NOTE}`);
    expect(result.stdout + result.stderr + log.text()).not.toContain(SECRET);
    expect(statSync(db).mode & 0o777).toBe(0o600);

    const { store, close } = openSqliteStore(db);
    const [stored] = await store.listSecrets();
    close();
    const webhook = emu.emulator.webhooks()[0]!;
    expect(stored).toMatchObject({ secret: SECRET, webhookId: webhook.id, url: URL_OK, eventTypes: ['pod.created', 'pod.active'] });
    expect(result.stdout).toContain(`fingerprint ${stored!.fingerprint}`);
  });

  it('prints it with --show-secret, and writes an owner-only --secret-file (never over an existing file)', async () => {
    const { emu, requests } = await service();
    const dir = tempDir();
    const file = join(dir, 'secret.txt');
    const result = await runMain(['register', '--url', URL_OK, '--show-secret', '--secret-file', file], envFor(emu, dbIn(dir)));
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`secret value  ${SECRET}`);
    expect(readFileSync(file, 'utf8')).toBe(`${SECRET}\n`);
    expect(statSync(file).mode & 0o777).toBe(0o600);

    const again = await runMain(['register', '--url', URL_OK, '--secret-file', file], envFor(emu, dbIn(dir)));
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('already exists');
    expect(await requests()).toHaveLength(1);
  });

  it('pipes it to `wrangler secret put SVC_WEBHOOK_SECRET` on stdin, never in argv', async () => {
    const { emu } = await service();
    const dir = tempDir();
    const fake = join(dir, 'wrangler');
    // Stands in for wrangler (which would need a Cloudflare login): records its argv, env and stdin.
    writeFileSync(fake, `#!/bin/sh\nprintf '%s\\n' "$@" > "${dir}/argv"\necho "$WRANGLER_SEND_METRICS" > "${dir}/metrics"\ncat > "${dir}/stdin"\necho "Success! Uploaded secret SVC_WEBHOOK_SECRET"\n`);
    chmodSync(fake, 0o755);
    const result = await runCli(['register', '--url', URL_OK, '--wrangler'], envFor(emu, dbIn(dir), { WRANGLER: fake }));
    expect(result.code).toBe(0);
    expect(readFileSync(join(dir, 'argv'), 'utf8')).toBe('secret\nput\nSVC_WEBHOOK_SECRET\n');
    expect(readFileSync(join(dir, 'stdin'), 'utf8')).toBe(SECRET);
    expect(readFileSync(join(dir, 'metrics'), 'utf8')).toBe('false\n');
    expect(result.stdout).toContain('set as SVC_WEBHOOK_SECRET with wrangler secret put');
    expect(result.stderr).toContain('Success! Uploaded secret');
    expect(result.stdout + result.stderr).not.toContain(SECRET);
  });

  it('exit 8 when wrangler fails after the webhook was created; the secret stays stored', async () => {
    const { emu } = await service();
    const dir = tempDir();
    const result = await runMain(['register', '--url', URL_OK, '--wrangler'], envFor(emu, dbIn(dir), { WRANGLER: '/bin/false' }));
    expect(result.code).toBe(8);
    expect(result.stderr).toContain('wrangler secret put failed (exit code 1)');
    expect(result.stderr).toContain('the secret is kept only where listed above');
    const { store, close } = openSqliteStore(dbIn(dir));
    expect((await store.listSecrets()).map((s) => s.secret)).toEqual([SECRET]);
    close();
  });
});

/** `podhook serve` on `db` with no SVC_WEBHOOK_SECRET, and a way to post a delivery signed with any secret. */
async function receiverWithoutSecret(db: string) {
  const receiver = await spawnServer({ DATABASE_PATH: db });
  const post = (secret: string) => {
    const d = signDelivery({ secret, t: nowS() });
    return fetch(`${receiver.url}/webhooks`, { method: 'POST', headers: d.headers, body: d.body });
  };
  return { receiver, post };
}

describe('podhook register with a running receiver (no SVC_WEBHOOK_SECRET)', () => {
  it('makes the receiver accept deliveries signed with the stored secret at once, and refuse them once removed', async () => {
    const { emu, log } = await service();
    const db = dbIn(tempDir());
    const { receiver, post } = await receiverWithoutSecret(db);
    try {
      expect((await post(SECRET)).status).toBe(503);
      const registered = await runCli(['register', '--url', URL_OK], envFor(emu, db));
      expect(registered.code).toBe(0);
      expect((await post(SECRET)).status).toBe(200);
      expect((await fetch(`${receiver.url}/readyz`)).status).toBe(200);

      const fingerprint = /fingerprint ([0-9a-f]{12})/.exec(registered.stdout)![1]!;
      const removed = await runCli(['secrets', 'remove', fingerprint], { DATABASE_PATH: db });
      expect(removed.code).toBe(0);
      expect(removed.stderr).toContain('no signing secret is left');
      expect((await post(SECRET)).status).toBe(503);
      expect(registered.stdout + registered.stderr + removed.stdout + removed.stderr + receiver.output() + log.text()).not.toContain(SECRET);
    } finally {
      receiver.child.kill('SIGTERM');
    }
  });

  it('rotates with no gap: both secrets are accepted until the old one is removed, which is then refused', { timeout: 60_000 }, async () => {
    const secrets = ['whsec_rotation_old_a1b2c3d4e5f6', 'whsec_rotation_new_f6e5d4c3b2a1'];
    const { emu } = await service({ generateSecret: () => secrets.shift()! });
    const db = dbIn(tempDir());
    const { receiver, post } = await receiverWithoutSecret(db);
    try {
      const first = await runCli(['register', '--url', URL_OK], envFor(emu, db));
      const second = await runCli(['register', '--url', URL_OK], envFor(emu, db));
      expect([first.code, second.code]).toEqual([0, 0]);
      expect((await post('whsec_rotation_old_a1b2c3d4e5f6')).status).toBe(200);
      expect((await post('whsec_rotation_new_f6e5d4c3b2a1')).status).toBe(200);
      const [old] = JSON.parse((await runCli(['secrets', 'list', '--json'], { DATABASE_PATH: db })).stdout) as { id: string }[];
      expect((await runCli(['secrets', 'remove', old!.id], { DATABASE_PATH: db })).code).toBe(0);
      expect((await post('whsec_rotation_old_a1b2c3d4e5f6')).status).toBe(401);
      expect((await post('whsec_rotation_new_f6e5d4c3b2a1')).status).toBe(200);
    } finally {
      receiver.child.kill('SIGTERM');
    }
  });
});
