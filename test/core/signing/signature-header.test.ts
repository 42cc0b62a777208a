import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bytesToHex, parseSignatureHeader } from '../../../src/core/signing/signature-header.js';

const HEX = 'a'.repeat(64);
const HEX2 = '0123456789abcdef'.repeat(4);

describe('parseSignatureHeader', () => {
  it('parses t and one v1', () => {
    const r = parseSignatureHeader(`t=1790000000,v1=${HEX2}`);
    expect(r).toMatchObject({ ok: true, value: { t: '1790000000', timestamp: 1790000000 } });
    if (r.ok) expect(r.value.signatures.map(bytesToHex)).toEqual([HEX2]);
  });

  it('keeps every v1, in order, and ignores unknown schemes', () => {
    const r = parseSignatureHeader(`v1=${HEX},t=5,v0=zzz,v1=${HEX2},v2=whatever`);
    expect(r.ok && r.value.signatures.map(bytesToHex)).toEqual([HEX, HEX2]);
  });

  it('accepts upper-case hex and spaces after commas', () => {
    const r = parseSignatureHeader(`t=5, v1=${HEX2.toUpperCase()}`);
    expect(r.ok && bytesToHex(r.value.signatures[0]!)).toBe(HEX2);
  });

  it.each([
    ['empty', ''],
    ['blank', '   '],
    ['no t', `v1=${HEX}`],
    ['repeated t', `t=5,t=5,v1=${HEX}`],
    ['t with sign', `t=+5,v1=${HEX}`],
    ['negative t', `t=-5,v1=${HEX}`],
    ['zero t', `t=0,v1=${HEX}`],
    ['leading zero', `t=05,v1=${HEX}`],
    ['decimal t', `t=5.0,v1=${HEX}`],
    ['exponent t', `t=5e9,v1=${HEX}`],
    ['hex t', `t=0x10,v1=${HEX}`],
    ['empty t', `t=,v1=${HEX}`],
    ['huge t', `t=${'9'.repeat(16)},v1=${HEX}`],
    ['unknown schemes only', `t=5,v2=${HEX},v0=${HEX}`],
    ['short v1', `t=5,v1=${HEX.slice(1)}`],
    ['long v1', `t=5,v1=${HEX}0`],
    ['non-hex v1', `t=5,v1=${'g'.repeat(64)}`],
    ['one bad v1 among good', `t=5,v1=${HEX},v1=xyz`],
    ['empty v1', `t=5,v1=`],
    ['item without =', `t=5,v1=${HEX},garbage`],
    ['trailing comma', `t=5,v1=${HEX},`],
    ['semicolons', `t=5;v1=${HEX}`],
    ['too many items', `t=5,${Array.from({ length: 16 }, () => `v1=${HEX}`).join(',')}`],
    ['too long', `t=5,v1=${HEX},x=${'a'.repeat(2100)}`],
  ])('refuses %s', (_name, header) => {
    expect(parseSignatureHeader(header).ok).toBe(false);
  });

  it('refuses a missing header', () => {
    expect(parseSignatureHeader(null)).toEqual({ ok: false, reason: 'empty' });
    expect(parseSignatureHeader(undefined).ok).toBe(false);
  });
});

describe('parseSignatureHeader properties', () => {
  it('never throws, whatever the input', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), (s) => {
        parseSignatureHeader(s);
      }),
      { numRuns: 3000 },
    );
  });

  it('never throws on inputs built from the header alphabet', () => {
    const token = fc.constantFrom('t', 'v1', 'v2', '=', ',', ' ', '0', '1', '9', 'a', 'f', 'g', HEX, '-', '+', '.');
    fc.assert(
      fc.property(fc.array(token, { maxLength: 40 }), (parts) => {
        parseSignatureHeader(parts.join(''));
      }),
      { numRuns: 3000 },
    );
  });

  it('round-trips every well-formed header', () => {
    const hex64 = fc.uint8Array({ minLength: 32, maxLength: 32 }).map(bytesToHex);
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 999_999_999_999_999 }), fc.array(hex64, { minLength: 1, maxLength: 5 }), (t, sigs) => {
        const r = parseSignatureHeader([`t=${t}`, ...sigs.map((s) => `v1=${s}`)].join(','));
        expect(r.ok).toBe(true);
        if (r.ok) {
          expect(r.value.t).toBe(String(t));
          expect(r.value.timestamp).toBe(t);
          expect(r.value.signatures.map(bytesToHex)).toEqual(sigs);
        }
      }),
    );
  });

  it('accepts only headers with exactly one plain-integer t and only 64-hex v1 values', () => {
    const item = fc.oneof(
      fc.tuple(fc.constantFrom('t', 'v1', 'v0', 'x'), fc.string({ maxLength: 70 })).map(([k, v]) => `${k}=${v}`),
      fc.string({ maxLength: 20 }),
    );
    fc.assert(
      fc.property(fc.array(item, { maxLength: 6 }), (items) => {
        const header = items.join(',');
        const r = parseSignatureHeader(header);
        if (!r.ok) return;
        const pairs = header.split(',').map((p) => p.trim().split(/=(.*)/s));
        const ts = pairs.filter(([k]) => k === 't');
        expect(ts).toHaveLength(1);
        expect(ts[0]![1]).toMatch(/^[1-9]\d*$/);
        const v1s = pairs.filter(([k]) => k === 'v1');
        expect(v1s.length).toBeGreaterThan(0);
        for (const [, v] of v1s) expect(v).toMatch(/^[0-9a-fA-F]{64}$/);
        expect(r.value.signatures).toHaveLength(v1s.length);
      }),
      { numRuns: 5000 },
    );
  });
});
