import { describe, expect, it } from 'vitest';
import { EVENT_TYPES } from '../../../src/core/events/event-types.js';
import { inferShapes, JSON_SCHEMA_DIALECT, MAX_PROPERTIES, shapesToJsonSchema, type JsonSchema } from '../../../src/core/shapes/index.js';
import { schemaProblems, validateSubset } from '../../helpers/json-schema-subset.js';

const T0 = Date.parse('2026-05-01T12:00:00Z');
const ID = '6f1c2a57-3b8e-4d2a-9c1f-0e2d3c4b5a69';
const payloads = Array.from({ length: 20 }, (_, i) => ({
  pod: { id: ID, status: i % 2 ? 'active' : 'provisioning', created_at: '2026-05-01T12:00:00Z' },
  size: i,
  ratio: i / 3,
  note: i === 0 ? null : 'x',
  ...(i === 1 ? { extra: [1, 'a'] } : {}),
  labels: i === 0 ? Object.fromEntries(Array.from({ length: MAX_PROPERTIES + 1 }, (_, k) => [`k${k}`, true])) : {},
}));
const shapes = inferShapes(payloads.map((payload, i) => ({ eventType: 'pod.created', payload, receivedAt: T0 + i })));

describe('shapesToJsonSchema', () => {
  const doc = shapesToJsonSchema(shapes);
  const created = (doc.$defs as Record<string, JsonSchema>)['pod.created']!;

  it('is one 2020-12 document with a definition per event type', () => {
    expect(doc.$schema).toBe(JSON_SCHEMA_DIALECT);
    expect(doc.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
    expect(Object.keys(doc.$defs as object)).toEqual([...EVENT_TYPES]);
    expect((doc.$defs as Record<string, JsonSchema>)['pod.active']).toEqual({ description: 'pod.active: no sample: any JSON object', type: 'object', additionalProperties: true });
    expect(created.description).toBe('pod.created: inferred from 20 samples received from 2026-05-01T12:00:00.000Z to 2026-05-01T12:00:00.019Z');
    expect(schemaProblems(doc)).toEqual([]);
  });

  it('writes formats, integer apart from number, nullable as a type array, required lists, open objects and maps', () => {
    expect(created).toMatchObject({ type: 'object', required: ['labels', 'note', 'pod', 'ratio', 'size'], additionalProperties: true });
    const properties = created.properties as Record<string, JsonSchema>;
    expect(properties.pod).toEqual({
      type: 'object',
      properties: {
        created_at: { type: 'string', format: 'date-time' },
        id: { type: 'string', format: 'uuid' },
        status: { type: 'string', examples: ['active', 'provisioning'] },
      },
      required: ['created_at', 'id', 'status'],
      additionalProperties: true,
    });
    expect(properties.size).toEqual({ type: 'integer' });
    expect(properties.ratio).toEqual({ type: 'number' });
    expect(properties.note).toEqual({ type: ['string', 'null'] });
    expect(properties.extra).toEqual({ type: 'array', items: { type: ['string', 'integer'] } });
    expect(properties.labels).toEqual({ type: 'object', additionalProperties: { type: 'boolean' } });
  });

  it('every sample validates against its type definition', () => {
    for (const p of payloads) expect(validateSubset(created, p)).toEqual([]);
    expect(validateSubset(created, { ...payloads[0], size: 1.5 })).toEqual(['$.size: number is not integer']);
  });

  it('limits the document to the types asked for', () => {
    expect(Object.keys(shapesToJsonSchema(shapes, ['pod.created']).$defs as object)).toEqual(['pod.created']);
  });
});
