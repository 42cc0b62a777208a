import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { base64ToBytes, bytesToBase64 } from '../../../src/core/transfer/base64.js';

// The padded standard form as RFC 4648 §4 writes it (the check this one replaced): a reference for small inputs.
const REFERENCE = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

describe('base64 (the export format)', () => {
  it('accepts exactly the padded standard form', () => {
    const text = fc.string({ unit: fc.constantFrom(...'AZaz09+/=-_ \n'.split('')), maxLength: 24 });
    fc.assert(
      fc.property(text, (t) => {
        let accepted = true;
        try {
          base64ToBytes(t);
        } catch {
          accepted = false;
        }
        expect(accepted).toBe(REFERENCE.test(t));
      }),
      { numRuns: 5_000 },
    );
  });

  it('encodes as Node\'s own base64 does, for every length and byte value', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
        expect(bytesToBase64(bytes)).toBe(Buffer.from(bytes).toString('base64'));
      }),
      { numRuns: 2_000 },
    );
  });

  it('round-trips the largest body the receiver takes (16 MiB, every byte value), and refuses one bad character at its end', () => {
    const bytes = new Uint8Array(16 * 1024 * 1024);
    for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 131 + (i >> 9)) & 0xff;
    const text = bytesToBase64(bytes);
    expect(text.length).toBe(22_369_624);
    const back = base64ToBytes(text);
    expect(back.length).toBe(bytes.length);
    expect(back.every((b, i) => b === bytes[i])).toBe(true);
    expect(() => base64ToBytes(`${text.slice(0, -4)}AA!=`)).toThrow(TypeError);
  });
});
