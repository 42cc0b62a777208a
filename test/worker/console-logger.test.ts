import { describe, expect, it } from 'vitest';
import { createConsoleLogger, type ConsoleSink } from '../../src/worker/console-logger.js';
import { signDelivery, TEST_SECRET, toRequest } from '../helpers/sign.js';
import { openWorkerTarget } from './worker-target.js';

function captureConsole() {
  const lines: { method: keyof ConsoleSink; record: Record<string, unknown>; text: string }[] = [];
  const sink = Object.fromEntries(
    (['debug', 'log', 'warn', 'error'] as const).map((method) => [
      method,
      (text: string) => lines.push({ method, text, record: JSON.parse(text) as Record<string, unknown> }),
    ]),
  ) as unknown as ConsoleSink;
  return { sink, lines };
}

describe('console logger (the Worker\'s Logger)', () => {
  it('writes one pino-shaped JSON object per line, on the console method of its level', () => {
    const { sink, lines } = captureConsole();
    const log = createConsoleLogger({ sink, now: () => 1_790_000_000_000 });
    log.info({ event_id: 'e1' }, 'delivery');
    log.warn({ n: 1 }, 'careful');
    log.error({ err: new TypeError('boom') }, 'failed');
    expect(lines.map((l) => l.method)).toEqual(['log', 'warn', 'error']);
    expect(lines[0]!.record).toEqual({ level: 30, time: 1_790_000_000_000, service: 'podhook', event_id: 'e1', msg: 'delivery' });
    expect(lines[2]!.record.err).toEqual({ type: 'TypeError', message: 'boom' });
    expect(lines.every((l) => !l.text.includes('\n'))).toBe(true);
  });

  it('drops lines below its level and keeps child bindings', () => {
    const { sink, lines } = captureConsole();
    const log = createConsoleLogger({ level: 'warn', sink }).child({ request_id: 'r1' });
    log.debug({}, 'noise');
    log.info({}, 'noise');
    log.warn({ a: 1 }, 'kept');
    expect(lines).toHaveLength(1);
    expect(lines[0]!.record).toMatchObject({ level: 40, service: 'podhook', request_id: 'r1', a: 1, msg: 'kept' });
  });

  it('redacts secret-bearing keys and survives a cyclic field', () => {
    const { sink, lines } = captureConsole();
    const log = createConsoleLogger({ sink });
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    log.info({ secret: 'whsec_x', nested: { signature: 't=1,v1=ab' } }, 'r');
    log.info({ cyclic }, 'c');
    expect(lines[0]!.text).not.toContain('whsec_x');
    expect(lines[0]!.text).not.toContain('v1=ab');
    expect(lines[1]!.record).toMatchObject({ msg: 'c', log_error: expect.any(String) });
  });

  it('logs one line per delivery through the Worker, with ids and outcome, never the secret or signature', async () => {
    const { sink, lines } = captureConsole();
    const t = await openWorkerTarget({ secrets: [TEST_SECRET] }, { logger: createConsoleLogger({ sink, level: 'debug' }) });
    t.setNow(1_790_000_000_000);
    const d = signDelivery();
    expect((await t.fetch(toRequest(d, 'http://podhook.test/webhooks', { 'x-request-id': 'req-00000001' }))).status).toBe(200);
    expect((await t.fetch(toRequest(signDelivery({ secret: 'wrong' })))).status).toBe(401);
    const deliveries = lines.filter((l) => l.record.msg === 'delivery').map((l) => l.record);
    expect(deliveries[0]).toMatchObject({ request_id: 'req-00000001', event_id: d.eventId, event_type: 'pod.created', outcome: 'accepted', status: 200 });
    expect(deliveries[1]).toMatchObject({ outcome: 'rejected', status: 401 });
    const all = lines.map((l) => l.text).join('\n');
    expect(all).not.toContain(TEST_SECRET);
    expect(all).not.toContain(d.headers['x-svc-signature']!.split('v1=')[1]!);
  });
});
