import { describe, expect, it } from 'vitest';
import { PodhookError } from '../../../src/core/errors.js';
import { createWebSignatureCrypto, type SignatureCrypto } from '../../../src/core/signing/signature-crypto.js';
import { verifySignature } from '../../../src/core/signing/verify-signature.js';
import { createNodeSignatureCrypto } from '../../../src/node/node-crypto.js';
import { FIXED_NOW_MS, mac, signDelivery, TEST_SECRET } from '../../helpers/sign.js';

const NOW_S = FIXED_NOW_MS / 1000;

async function refusal(p: Promise<unknown>): Promise<{ status: number; reason: string }> {
  try {
    await p;
  } catch (error) {
    if (error instanceof PodhookError) return { status: error.status, reason: error.reason };
    throw error;
  }
  throw new Error('expected a refusal');
}

describe.each<[string, SignatureCrypto]>([
  ['node:crypto', createNodeSignatureCrypto()],
  ['Web Crypto', createWebSignatureCrypto()],
])('verifySignature with %s', (_name, crypto) => {
  const verify = (header: string | null, body: Uint8Array, secrets = [TEST_SECRET], nowMs = FIXED_NOW_MS) =>
    verifySignature(header, body, secrets, { crypto, clock: () => nowMs });

  it('accepts a delivery signed as the spec says', async () => {
    const d = signDelivery();
    await expect(verify(d.headers['x-svc-signature']!, d.body)).resolves.toMatchObject({ timestamp: NOW_S });
  });

  it.each([
    ['300 s old', -300, true],
    ['301 s old', -301, false],
    ['300 s ahead', 300, true],
    ['301 s ahead', 301, false],
  ])('window edge: %s', async (_label, offset, ok) => {
    const d = signDelivery({ t: NOW_S + offset });
    const p = verify(d.headers['x-svc-signature']!, d.body);
    if (ok) await expect(p).resolves.toBeDefined();
    else
      expect(await refusal(p)).toEqual({
        status: 401,
        reason: offset < 0 ? 'timestamp_too_old' : 'timestamp_in_future',
      });
  });

  it('counts whole seconds: 300.999 s after t is still inside', async () => {
    const d = signDelivery({ t: NOW_S - 300 });
    await expect(verify(d.headers['x-svc-signature']!, d.body, [TEST_SECRET], FIXED_NOW_MS + 999)).resolves.toBeDefined();
  });

  it('checks the window before the MAC (a stale delivery is refused before its body is needed)', async () => {
    const d = signDelivery({ t: NOW_S - 1000, secret: 'wrong' });
    expect(await refusal(verify(d.headers['x-svc-signature']!, d.body))).toEqual({ status: 401, reason: 'timestamp_too_old' });
  });

  it('refuses one flipped body byte', async () => {
    const d = signDelivery();
    const body = d.body.slice();
    body[5]! ^= 0x01;
    expect(await refusal(verify(d.headers['x-svc-signature']!, body))).toEqual({ status: 401, reason: 'signature_mismatch' });
  });

  it('refuses re-serialised JSON (same data, different bytes)', async () => {
    const d = signDelivery({ body: '{ "pod": { "id": "p1", "name": "demo" } }' });
    const reserialised = new TextEncoder().encode(JSON.stringify(JSON.parse(new TextDecoder().decode(d.body))));
    expect(reserialised).not.toEqual(d.body);
    expect((await refusal(verify(d.headers['x-svc-signature']!, reserialised))).status).toBe(401);
  });

  it('accepts any of several v1 entries', async () => {
    const d = signDelivery({ extraSignatures: ['0'.repeat(64), 'f'.repeat(64)] });
    await expect(verify(d.headers['x-svc-signature']!, d.body)).resolves.toBeDefined();
  });

  it('accepts a delivery signed with either of two secrets (rotation)', async () => {
    const a = signDelivery({ secret: 'old-secret' });
    const b = signDelivery({ secret: 'new-secret' });
    await expect(verify(a.headers['x-svc-signature']!, a.body, ['new-secret', 'old-secret'])).resolves.toBeDefined();
    await expect(verify(b.headers['x-svc-signature']!, b.body, ['new-secret', 'old-secret'])).resolves.toBeDefined();
    expect((await refusal(verify(b.headers['x-svc-signature']!, b.body, ['old-secret']))).status).toBe(401);
  });

  it('keys the HMAC with the secret UTF-8 bytes', async () => {
    const secret = 'sécret-🔑';
    const d = signDelivery({ secret });
    await expect(verify(d.headers['x-svc-signature']!, d.body, [secret])).resolves.toBeDefined();
  });

  it('signs the raw t string: the MAC of another spelling of t does not pass', async () => {
    const d = signDelivery();
    const header = `t=${NOW_S},v1=${mac(TEST_SECRET, `${NOW_S}.0`, d.body)}`;
    expect((await refusal(verify(header, d.body))).status).toBe(401);
  });

  it('answers 400 for a malformed header and 503 when no secret is configured', async () => {
    const d = signDelivery();
    expect(await refusal(verify('t=1,v1=zz', d.body))).toEqual({ status: 400, reason: 'malformed_signature:bad_v1_signature' });
    expect(await refusal(verify(null, d.body))).toEqual({ status: 400, reason: 'missing_signature' });
    expect(await refusal(verify(d.headers['x-svc-signature']!, d.body, []))).toEqual({ status: 503, reason: 'no_secret_configured' });
  });

  it('compares in constant time over equal lengths only', () => {
    expect(crypto.equal(new Uint8Array([1, 2]), new Uint8Array([1, 2]))).toBe(true);
    expect(crypto.equal(new Uint8Array([1, 2]), new Uint8Array([1, 3]))).toBe(false);
    expect(crypto.equal(new Uint8Array([1, 2]), new Uint8Array([1, 2, 3]))).toBe(false);
  });
});
