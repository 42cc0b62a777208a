import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { validateCreateWebhookBody } from '../../src/service-api/create-webhook-body.js';
import { validateWebhookUrl } from '../../src/service-api/validate-webhook-url.js';
import { ACCEPTED_URLS, REFUSED_URLS } from '../fixtures/webhook-urls.js';

describe('validateWebhookUrl: the service rules, before any request', () => {
  it.each(ACCEPTED_URLS)('accepts %j as %s', (input, normalised) => {
    expect(validateWebhookUrl(input)).toEqual({ ok: true, url: normalised });
  });

  it.each(REFUSED_URLS)('refuses %j (%s)', (input, problem) => {
    const verdict = validateWebhookUrl(input);
    expect(verdict).toMatchObject({ ok: false, problem });
    expect(verdict.ok || verdict.message.length > 20).toBe(true);
  });

  it('names what the parser made of a respelled host, and the range', () => {
    const hex = validateWebhookUrl('https://0x7f.1/');
    expect(hex.ok || hex.message).toBe(
      'the host 0x7f.1 is the IP address 127.0.0.1, a non-public address (loopback, 127.0.0.0/8): the service only delivers to public addresses',
    );
    const mapped = validateWebhookUrl('https://[::ffff:10.0.0.1]/');
    expect(mapped.ok || mapped.message).toContain('IPv4-mapped private (RFC 1918), ::ffff:0:0/96 carrying 10.0.0.1 in 10.0.0.0/8');
    // Inside ::/8, but the narrower local-use NAT64 range is the one named.
    const localNat64 = validateWebhookUrl('https://[64:ff9b:1::a00:1]/');
    expect(localNat64.ok || localNat64.message).toContain('local-use NAT64, 64:ff9b:1::/48');
    const encoded = validateWebhookUrl('https://%6c%6fcalhost/');
    expect(encoded.ok || encoded.message).toMatch(/^the host %6c%6fcalhost is localhost: /);
    const empty = validateWebhookUrl('https://:@hooks.example.com/');
    expect(empty.ok || empty.message).toContain('even an empty one');
  });

  it('accepts local targets only when asked (emulator), and never credentials', () => {
    expect(validateWebhookUrl('http://127.0.0.1:3000/webhooks', { allowLocal: true })).toEqual({ ok: true, url: 'http://127.0.0.1:3000/webhooks' });
    expect(validateWebhookUrl('http://localhost/webhooks', { allowLocal: true }).ok).toBe(true);
    expect(validateWebhookUrl('https://@127.0.0.1/', { allowLocal: true })).toMatchObject({ ok: false, problem: 'credentials' });
    expect(validateWebhookUrl('ws://127.0.0.1/', { allowLocal: true })).toMatchObject({ ok: false, problem: 'not_https' });
  });

  const uint32 = fc.integer({ min: 0, max: 0xffffffff });
  const dotted = (n: number) => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');

  it('gives every spelling of an IPv4 address the verdict of its dotted form', () => {
    fc.assert(
      fc.property(uint32, fc.constantFrom('decimal', 'hex', 'octal', 'hex-parts', 'mapped'), (n, form) => {
        const [a, b, c, d] = dotted(n).split('.').map(Number) as [number, number, number, number];
        const host = {
          decimal: String(n),
          hex: `0x${n.toString(16)}`,
          octal: `0${n.toString(8)}`,
          'hex-parts': [a, b, c, d].map((p) => `0x${p.toString(16)}`).join('.'),
          mapped: `[::ffff:${dotted(n)}]`,
        }[form];
        const reference = validateWebhookUrl(`https://${dotted(n)}/`);
        const spelled = validateWebhookUrl(`https://${host}/`);
        expect(spelled.ok).toBe(reference.ok);
        if (!spelled.ok && !reference.ok) expect(spelled.problem).toBe(reference.problem);
      }),
      { numRuns: 500 },
    );
  });

  it('refuses every address of the private, loopback and link-local IPv4 ranges, also through NAT64', () => {
    const inRange = (base: number, bits: number) => fc.integer({ min: 0, max: 2 ** (32 - bits) - 1 }).map((k) => (base + k) >>> 0);
    const ip = (text: string) => text.split('.').reduce((acc, p) => acc * 256 + Number(p), 0);
    fc.assert(
      fc.property(
        fc.oneof(inRange(ip('10.0.0.0'), 8), inRange(ip('127.0.0.0'), 8), inRange(ip('169.254.0.0'), 16), inRange(ip('172.16.0.0'), 12), inRange(ip('192.168.0.0'), 16)),
        (n) => {
          expect(validateWebhookUrl(`https://${dotted(n)}/`)).toMatchObject({ ok: false, problem: 'non_public_address' });
          expect(validateWebhookUrl(`https://[64:ff9b::${dotted(n)}]/`)).toMatchObject({ ok: false, problem: 'non_public_address' });
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('validateCreateWebhookBody: the body rules shared by the CLI and the emulator', () => {
  it('omits event_types when not given, dedupes them, and refuses an empty or unknown list', () => {
    expect(validateCreateWebhookBody({ url: 'https://hooks.example.com/' })).toEqual({ ok: true, body: { url: 'https://hooks.example.com/' } });
    expect(validateCreateWebhookBody({ url: 'https://hooks.example.com/', event_types: ['pod.created', 'pod.created'] })).toEqual({
      ok: true,
      body: { url: 'https://hooks.example.com/', event_types: ['pod.created'] },
    });
    expect(validateCreateWebhookBody({ url: 'https://hooks.example.com/', event_types: [] })).toMatchObject({
      ok: false,
      details: { field: 'event_types', problem: 'empty' },
    });
    expect(validateCreateWebhookBody({ url: 'https://hooks.example.com/', event_types: ['pod.created', 'pod.exploded'] })).toMatchObject({
      ok: false,
      message: expect.stringContaining('"pod.exploded"'),
      details: { field: 'event_types', problem: 'unknown_event_type', unknown: ['pod.exploded'] },
    });
    expect(validateCreateWebhookBody({ event_types: ['pod.created'] })).toMatchObject({ ok: false, details: { field: 'url', problem: 'missing' } });
    expect(validateCreateWebhookBody([])).toMatchObject({ ok: false, details: { field: 'body' } });
  });
});
