import { describe, expect, it } from 'vitest';
import { handlers } from '../../handlers/index.js';
import { createRouter, EVENT_TYPES } from '../../src/index.js';
import { captureLogger } from '../helpers/capture-logger.js';

describe('handlers/ registry', () => {
  it('has a module for every event type', () => {
    const specific = new Set(handlers.map((h) => h.pattern));
    expect(EVENT_TYPES.filter((t) => !specific.has(t))).toEqual([]);
  });

  it('has unique names (they key the ledger)', () => {
    expect(() => createRouter(handlers)).not.toThrow();
  });

  it.each(EVENT_TYPES)('the %s example logs what happened, with the pod fields', async (type) => {
    const handler = handlers.find((h) => h.pattern === type)!;
    const log = captureLogger();
    const payload = { data: { pod: { id: 'pod-123', name: 'research-bot', status: 'provisioning' }, expires_at: '2026-12-01T00:00:00Z', error: 'quota' } };
    await handler.handle(
      { id: 'e1', type, signatureTimestamp: 1, receivedAt: new Date(), payload, rawBody: new Uint8Array(), attempt: 1 },
      { log: log.logger, signal: new AbortController().signal },
    );
    const [line] = log.records();
    expect(line).toMatchObject({ pod_id: 'pod-123', pod_name: 'research-bot' });
    expect(String(line!.msg)).toMatch(/^pod /);
  });
});
