import { describe, expect, it } from 'vitest';
import { captureLogger } from '../helpers/capture-logger.js';

describe('Node logger (pino)', () => {
  it('writes JSON lines with the service, fields and message', () => {
    const { logger, records } = captureLogger();
    logger.info({ event_id: 'e1', status: 200 }, 'delivery');
    expect(records()).toEqual([expect.objectContaining({ level: 30, service: 'podhook', event_id: 'e1', status: 200, msg: 'delivery' })]);
  });

  it('never prints a secret-bearing field: in fields, nested, in child bindings, in an error', () => {
    const { logger, text, records } = captureLogger();
    logger.info({ secret: 'whsec_top', webhook: { secret: 'whsec_nested' } }, 'a');
    logger.child({ apiKey: 'key_binding', handler: 'h1' }).warn({ headers: { 'x-svc-signature': 't=1,v1=deadbeef' } }, 'b');
    logger.error({ err: Object.assign(new Error('failed'), { signature: 'v1=cafe' }) }, 'c');
    for (const leaked of ['whsec_top', 'whsec_nested', 'key_binding', 'deadbeef', 'cafe']) expect(text()).not.toContain(leaked);
    const [a, b, c] = records();
    expect(a).toMatchObject({ secret: '[redacted]', webhook: { secret: '[redacted]' } });
    expect(b).toMatchObject({ handler: 'h1', apiKey: '[redacted]', headers: { 'x-svc-signature': '[redacted]' } });
    expect(c).toMatchObject({ err: { type: 'Error', message: 'failed', signature: '[redacted]' } });
  });
});
