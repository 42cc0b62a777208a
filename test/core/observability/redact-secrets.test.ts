import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createSecretRedactor, MIN_SECRET_CHARS } from '../../../src/core/observability/redact-secrets.js';

describe('createSecretRedactor', () => {
  it('replaces each secret as written and as a URL carries it, longest first', () => {
    const redact = createSecretRedactor(() => ['tok/en+key=1234', 'whsec_abcdef123', 'whsec_abcdef123_long', null, undefined, '']);
    expect(redact('a=whsec_abcdef123_long b=whsec_abcdef123 c=tok%2Fen%2Bkey%3D1234 d=tok/en+key=1234')).toBe(
      'a=[redacted] b=[redacted] c=[redacted] d=[redacted]',
    );
  });

  it('asks for the secrets on every call: one added later is hidden without a new redactor', () => {
    const secrets = ['first-secret-1'];
    const redact = createSecretRedactor(() => secrets);
    expect(redact('first-secret-1 second-secret-2')).toBe('[redacted] second-secret-2');
    secrets.push('second-secret-2');
    expect(redact('first-secret-1 second-secret-2')).toBe('[redacted] [redacted]');
  });

  it(`leaves values shorter than ${MIN_SECRET_CHARS} characters alone, and never lets a secret through whatever surrounds it`, () => {
    expect(createSecretRedactor(() => ['short'])('a short word')).toBe('a short word');
    fc.assert(
      // Secrets of the characters tokens are made of (none of the marker's brackets).
      fc.property(fc.string({ minLength: MIN_SECRET_CHARS, unit: fc.constantFrom(...'abcdef0123456789_-'.split('')) }), fc.string(), fc.string(), (secret, before, after) => {
        const out = createSecretRedactor(() => [secret])(`${before}${secret}${after}`);
        expect(out.includes(secret)).toBe(false);
      }),
    );
  });
});
