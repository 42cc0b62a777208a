import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DELIVERY_STATUSES, type Delivery } from '../../../src/core/delivery.js';
import { KEPT_HEADERS } from '../../../src/core/ingest/kept-headers.js';
import { DELIVERY_EXPORT_FORMAT, exportLine, parseExportLine, toExportRecord } from '../../../src/core/transfer/delivery-export.js';

const time = fc.integer({ min: 0, max: 4_102_444_800_000 }); // up to 2100, whole milliseconds
const delivery: fc.Arbitrary<Delivery> = fc.record({
  eventId: fc.uuid(),
  eventType: fc.string({ minLength: 1, maxLength: 200 }),
  signatureT: fc.integer({ min: 1, max: 2 ** 40 }),
  body: fc.uint8Array({ maxLength: 3000 }),
  // Only allowlisted names survive an export (the CLI tests show others dropped).
  headers: fc.dictionary(fc.constantFrom(...KEPT_HEADERS), fc.string()),
  receivedAt: time,
  lastReceivedAt: time,
  deliveryCount: fc.integer({ min: 1, max: 1000 }),
  status: fc.constantFrom(...DELIVERY_STATUSES),
  attempts: fc.nat(100),
  lastError: fc.option(fc.string(), { nil: null }),
  nextAttemptAt: fc.option(time, { nil: null }),
  processedAt: fc.option(time, { nil: null }),
  // The receipt's trace context travels with it (an importer's attempts link to it); absent when traced off.
  traceParent: fc.option(fc.constant('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'), { nil: undefined }),
});

describe('the podhook.delivery.v1 export format', () => {
  it('reads back every delivery exactly, any body bytes included, one line each', () => {
    fc.assert(
      fc.property(delivery, (d) => {
        const line = exportLine(d);
        expect(line.indexOf('\n')).toBe(line.length - 1);
        const back = parseExportLine(line);
        expect({ ...back, body: Array.from(back.body) }).toEqual({ ...d, eventId: d.eventId.toLowerCase(), body: Array.from(d.body) });
      }),
      { numRuns: 300 },
    );
  });

  it('ignores fields it does not know and fills the optional ones (a v1 reader of a later v1 writer)', () => {
    const minimal = {
      format: DELIVERY_EXPORT_FORMAT,
      event_id: 'AAAAAAAA-BBBB-4CCC-8DDD-EEEEEEEEEEEE',
      event_type: 'pod.created',
      signature_t: 1790000000,
      received_at: '2026-09-21T12:00:00.000Z',
      status: 'dead',
      body_base64: '/w==',
      added_later: { anything: true },
    };
    expect(parseExportLine(JSON.stringify(minimal))).toEqual({
      eventId: 'aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee',
      eventType: 'pod.created',
      signatureT: 1790000000,
      body: new Uint8Array([0xff]),
      headers: {},
      receivedAt: Date.parse('2026-09-21T12:00:00.000Z'),
      lastReceivedAt: Date.parse('2026-09-21T12:00:00.000Z'),
      deliveryCount: 1,
      status: 'dead',
      attempts: 0,
      lastError: null,
      nextAttemptAt: null,
      processedAt: null,
    });
  });

  it('names what is wrong with a line it cannot read', () => {
    const good = toExportRecord({
      eventId: '6f1c2a57-0c1e-4d2b-9a43-0f8e1d2c3b4a', eventType: 'pod.created', signatureT: 1, body: new Uint8Array([1]), headers: {},
      receivedAt: 0, lastReceivedAt: 0, deliveryCount: 1, status: 'queued', attempts: 0, lastError: null, nextAttemptAt: 0, processedAt: null,
    });
    const cases: [unknown, RegExp][] = [
      ['{"format":', /^not JSON: /],
      [{ ...good, format: 'podhook.delivery.v2' }, /^format: unsupported format "podhook.delivery.v2" \(this podhook reads podhook.delivery.v1\)$/],
      [{ ...good, body_base64: 'AQ' }, /^body_base64: must be padded standard base64$/],
      [{ ...good, body_base64: 'A Q==' }, /^body_base64: /],
      [{ ...good, event_id: 'not-a-uuid' }, /^event_id: /],
      [{ ...good, received_at: 'yesterday' }, /^received_at: /],
      [{ ...good, status: 'lost' }, /^status: /],
    ];
    for (const [input, message] of cases) {
      expect(() => parseExportLine(typeof input === 'string' ? input : JSON.stringify(input))).toThrow(message);
    }
  });
});
