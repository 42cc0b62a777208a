import { describe, expect, it } from 'vitest';
import { REDACTED, redactFields } from '../../../src/core/observability/redact.js';

describe('redactFields (the one redaction rule of both loggers)', () => {
  it('returns flat fields with nothing to redact as the same object', () => {
    const fields = { request_id: 'r1', event_id: 'e1', status: 200, latency_ms: 1.5, nested: { a: [1, 2] } };
    expect(redactFields(fields)).toBe(fields);
  });

  it('redacts a secret-bearing key at any depth, in arrays, and leaves the input untouched', () => {
    const fields = {
      secret: 'whsec_top',
      webhook: { id: 'w1', secret: 'whsec_nested' },
      headers: { 'x-svc-signature': 't=1,v1=ab', 'content-type': 'application/json' },
      list: [{ apiKey: 'k1' }, 'plain'],
      deep: { a: { b: { c: { authorization: 'Bearer x' } } } },
    };
    const redacted = redactFields(fields);
    expect(redacted).toEqual({
      secret: REDACTED,
      webhook: { id: 'w1', secret: REDACTED },
      headers: { 'x-svc-signature': REDACTED, 'content-type': 'application/json' },
      list: [{ apiKey: REDACTED }, 'plain'],
      deep: { a: { b: { c: { authorization: REDACTED } } } },
    });
    expect(fields.secret).toBe('whsec_top');
    expect(fields.webhook.secret).toBe('whsec_nested');
    expect(redacted.list[1]).toBe('plain');
  });

  it('redacts a field of an error, which stays an error of its class with its message', () => {
    const error = Object.assign(new TypeError('boom'), { secret: 'whsec_err' });
    const redacted = redactFields({ cause: error }) as { cause: TypeError & { secret: string } };
    expect(redacted.cause).toBeInstanceOf(TypeError);
    expect(redacted.cause).toMatchObject({ message: 'boom', secret: REDACTED });
    expect(error.secret).toBe('whsec_err');
  });

  it('survives a cycle and does not walk byte arrays', () => {
    const cyclic: Record<string, unknown> = { signature: 'v1=ab' };
    cyclic.self = cyclic;
    const bytes = new Uint8Array(4);
    const redacted = redactFields({ cyclic, bytes }) as { cyclic: Record<string, unknown>; bytes: Uint8Array };
    expect(redacted.cyclic.signature).toBe(REDACTED);
    expect(redacted.bytes).toBe(bytes);
  });
});
