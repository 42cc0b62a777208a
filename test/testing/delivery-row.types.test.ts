// Type tests: checked by `tsc --noEmit` (part of `npm test`); the `it` blocks check the same at run time.
import { describe, expect, expectTypeOf, it } from 'vitest';
import type { DeliveryRow, TestReceiver } from 'podhook/testing';
import { deliveryJson, toExportRecord, type ExportRecord } from '../../src/core/transfer/delivery-export.js';
import type { Delivery } from '../../src/core/delivery.js';

/**
 * What the export record carries that a row does not: the row has `body_bytes` instead, and the
 * receipt's trace context travels with the delivery for an importer's spans, not for people.
 */
type RecordOnly = 'format' | 'headers' | 'body_base64' | 'trace_parent';

const quarantined: Delivery = {
  eventId: '6f1c2a9e-3b4d-4e5f-8a6b-7c8d9e0f1a2b',
  eventType: 'pod.created',
  signatureT: 1_764_000_000,
  body: new TextEncoder().encode('{"pod_id":"p1"}'),
  headers: { 'content-type': 'application/json' },
  receivedAt: 1_764_000_000_000,
  lastReceivedAt: 1_764_000_000_000,
  deliveryCount: 1,
  status: 'quarantined',
  attempts: 0,
  lastError: null,
  nextAttemptAt: null,
  processedAt: null,
  conflictWith: '0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d',
  drift: [{ path: '$.pod.region', kind: 'new_field', message: 'new field: string' }],
};

describe('the test kit delivery row', () => {
  it('is the row `podhook deliveries --json` prints', () => {
    expectTypeOf<DeliveryRow>().toEqualTypeOf<ReturnType<typeof deliveryJson>>();
    expectTypeOf<TestReceiver['deliveries']>().returns.resolves.toEqualTypeOf<ReturnType<typeof deliveryJson>[]>();
  });

  it('has every field of the export record but the body and headers, with the same types', () => {
    expectTypeOf<Exclude<keyof ExportRecord, keyof DeliveryRow>>().toEqualTypeOf<RecordOnly>();
    expectTypeOf<Exclude<keyof DeliveryRow, keyof ExportRecord>>().toEqualTypeOf<'body_bytes' | 'waiting_on' | 'parked'>();
    type Shared = Exclude<keyof DeliveryRow & keyof ExportRecord, 'conflict_with' | 'drift'>;
    expectTypeOf<Pick<DeliveryRow, Shared>>().toEqualTypeOf<Pick<ExportRecord, Shared>>();
    // A row says null where the record leaves the field out.
    expectTypeOf<DeliveryRow['conflict_with']>().toEqualTypeOf<NonNullable<ExportRecord['conflict_with']> | null>();
    expectTypeOf<DeliveryRow['drift']>().toEqualTypeOf<NonNullable<ExportRecord['drift']> | null>();

    const row: Record<string, unknown> = { ...deliveryJson(quarantined) };
    const record: Record<string, unknown> = { ...toExportRecord(quarantined) };
    for (const key of ['format', 'headers', 'body_base64', 'trace_parent'] satisfies RecordOnly[]) delete record[key];
    const { body_bytes, waiting_on, parked, ...shared } = row;
    expect(body_bytes).toBe(quarantined.body.byteLength);
    expect(waiting_on).toBeNull();
    expect(parked).toBeNull();
    expect(shared).toEqual(record);
  });
});
