import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { signatureHeader, signDeliveryHeaders } from '../../../src/core/signing/sign-delivery.js';
import { createWebSignatureCrypto } from '../../../src/core/signing/signature-crypto.js';
import { createNodeSignatureCrypto } from '../../../src/node/node-crypto.js';
import { mac } from '../../helpers/sign.js';

// The test helper's HMAC (node:crypto, written separately) is the oracle: the product signer
// must produce exactly what the service sends.
describe('signing a delivery as the service does', () => {
  it('writes t=<unix>,v1=<hex HMAC of "<t>.<raw body>"> with either crypto', async () => {
    const node = createNodeSignatureCrypto();
    const web = createWebSignatureCrypto();
    await fc.assert(
      fc.asyncProperty(fc.string({ minLength: 1 }), fc.integer({ min: 1, max: 2 ** 40 }), fc.uint8Array({ maxLength: 500 }), async (secret, t, body) => {
        const expected = `t=${t},v1=${mac(secret, t, body)}`;
        expect(await signatureHeader(node, secret, t, body)).toBe(expected);
        expect(await signatureHeader(web, secret, t, body)).toBe(expected);
      }),
      { numRuns: 100 },
    );
  });

  it('gives the three delivery headers, and refuses a timestamp that is not whole seconds', async () => {
    const crypto = createNodeSignatureCrypto();
    const body = new TextEncoder().encode('{}');
    expect(await signDeliveryHeaders({ crypto, secret: 's', eventId: 'id-1', eventType: 'pod.created', body, t: 1790000000 })).toEqual({
      'x-svc-signature': `t=1790000000,v1=${mac('s', 1790000000, body)}`,
      'x-svc-event-type': 'pod.created',
      'x-svc-event-id': 'id-1',
    });
    await expect(signatureHeader(crypto, 's', 1790000000.5, body)).rejects.toThrow(RangeError);
  });
});
