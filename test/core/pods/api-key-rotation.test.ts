// Issue 47 item 6 in-process: the API key is read where it is used, so a key stored with
// `podhook secrets add --api-key` (here: the store's putApiKey, what the command does) reaches a
// client made before it, within a second or at the next `unauthorized`; a key refused with no
// rotation behind it stays refused. Counted per request at a fake service that accepts one key.
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/core/config.js';
import { configuredPods } from '../../../src/core/pods/configured-pods.js';
import { createPodsAccess } from '../../../src/core/pods/pods-access.js';
import { PodsError } from '../../../src/core/pods/pods-error.js';
import { openSqliteStore } from '../../../src/store/sqlite/sqlite-store.js';
import { json, serviceError, useFakeServices } from '../../helpers/fake-pods-service.js';
import { dbIn, useTempDir } from '../../helpers/temp-dir.js';

const POD = '5b0c1a7e-7d33-4c55-9a71-2f0e3c4d5e6f';
const [OLD, NEW, NEWER] = ['svc_key_revoked_0a1b2c3d', 'svc_key_rotated_4e5f6a7b', 'svc_key_rotated_again_8c9d'];
const fakeService = useFakeServices();
const tempDir = useTempDir();
const closers: (() => void)[] = [];
afterEach(() => {
  for (const c of closers.splice(0)) c();
});

/** A service accepting only `accepted.key`, a store holding OLD, and a clock the test moves. */
async function world() {
  const accepted = { key: OLD };
  const service = await fakeService((req, res) =>
    req.headers['x-api-key'] === accepted.key ? json(res, 202, { action: { queued: 'restart', result_available: false, poll: '/x', note: '' } }) : serviceError(res, 401, 'unauthorized', 'Missing or invalid X-API-Key.'),
  );
  const opened = openSqliteStore(dbIn(tempDir()));
  closers.push(() => opened.close());
  const store = opened.store;
  const put = (secret: string) => store.putApiKey({ account: 'default', secret, fingerprint: secret.slice(-12), createdAt: Date.now() });
  await put(OLD);
  let now = 1_800_000_000_000;
  const clock = () => now;
  const config = parseConfig({ SVC_BASE_URL: service.url }).pods;
  return { accepted, service, store, put, clock, config, advance: (ms: number) => void (now += ms), keys: () => service.requests.map((r) => r.apiKey) };
}

describe('a rotated API key (47 item 6)', () => {
  it('is sent once more after unauthorized when the key changed since it was read, and read anew within a second', async () => {
    const w = await world();
    const pods = await configuredPods({ config: w.config, store: w.store, clock: w.clock });
    if (!pods.ok) throw new Error(pods.message);
    await pods.client.queueAction(POD, 'restart', { requestId: 'before-rotation' });
    // The key is revoked at the service and replaced with `podhook secrets add --api-key`.
    w.accepted.key = NEW;
    await w.put(NEW);
    // Read less than a second ago: the old key goes first, is refused, and the call goes again with the new one.
    await pods.client.queueAction(POD, 'restart', { requestId: 'after-rotation' });
    expect(w.keys()).toEqual([OLD, OLD, NEW]);
    expect(w.service.requests.slice(1).map((r) => r.requestId)).toEqual(['after-rotation', 'after-rotation']);
    // A second on, the next key is read before the request: no refusal at all.
    w.accepted.key = NEWER;
    await w.put(NEWER);
    w.advance(1_000);
    await pods.client.queueAction(POD, 'restart');
    expect(w.keys().slice(3)).toEqual([NEWER]);
  });

  it('stays unauthorized (permanent, one request) when no rotation is behind it', async () => {
    const w = await world();
    w.accepted.key = 'svc_key_nobody_has_0000';
    const access = createPodsAccess({ config: w.config, store: w.store, clock: w.clock });
    const error = await (await access()).queueAction(POD, 'restart').catch((e: unknown) => e as PodsError);
    expect(error).toBeInstanceOf(PodsError);
    expect(error).toMatchObject({ code: 'unauthorized', status: 401, retryable: false, operation: 'queueAction' });
    expect(w.keys()).toEqual([OLD]);
  });

  it('reaches the shared client of handlers (ctx.pods) made before it', async () => {
    const w = await world();
    const access = createPodsAccess({ config: w.config, store: w.store, clock: w.clock });
    await (await access()).queueAction(POD, 'restart');
    w.accepted.key = NEW;
    await w.put(NEW);
    w.advance(1_000);
    await (await access()).queueAction(POD, 'restart');
    expect(w.keys()).toEqual([OLD, NEW]);
  });
});
