import { createHash, createHmac, createSecretKey, timingSafeEqual, type KeyObject } from 'node:crypto';
import type { SignatureCrypto } from '../core/signing/signature-crypto.js';

/**
 * `node:crypto` implementation of the core's SignatureCrypto: about 4× faster than Web Crypto
 * on Node for 1 KiB bodies, and synchronous. Key objects are cached per secret.
 */
export function createNodeSignatureCrypto(): SignatureCrypto {
  const keys = new Map<string, KeyObject>();
  const keyFor = (secret: string) => {
    let key = keys.get(secret);
    if (!key) {
      if (keys.size > 64) keys.clear();
      key = createSecretKey(Buffer.from(secret, 'utf8'));
      keys.set(secret, key);
    }
    return key;
  };
  return {
    hmac(secret, t, body) {
      return createHmac('sha256', keyFor(secret)).update(t).update('.').update(body).digest();
    },
    digest(t, body) {
      return createHash('sha256').update(t).update('.').update(body).digest();
    },
    equal(a, b) {
      return a.length === b.length && timingSafeEqual(a, b);
    },
  };
}
