import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createDispatcher } from '../../../src/core/dispatch/dispatcher.js';
import { createReplayer } from '../../../src/core/transfer/replay-delivery.js';
import { createRouter, defineHandler, type HandlerDefinition } from '../../../src/index.js';
import { openSqliteStore } from '../../../src/store/sqlite/sqlite-store.js';
import { captureLogger } from '../../helpers/capture-logger.js';
import { dbIn, useTempDir } from '../../helpers/temp-dir.js';
import { newDelivery } from '../../store/store-contract.js';

const tempDir = useTempDir();
const ID = '0b6f7c2e-4a1d-4c8e-9f3a-2d5e6b7c8a90';

/** A generated schema that counts how often it parses. */
function countedSchema() {
  const counter = { parses: 0 };
  const schema = z.looseObject({ pod: z.looseObject({ id: z.uuid() }) }).transform((p) => {
    counter.parses++;
    return p;
  });
  return { counter, schemas: { 'pod.created': schema } };
}

function setup(handlers: HandlerDefinition[], payloadSchemas: Record<string, z.ZodType>) {
  const opened = openSqliteStore(dbIn(tempDir()));
  const log = captureLogger();
  const dispatcher = createDispatcher({ store: opened.store, router: createRouter(handlers), logger: log.logger, payloadSchemas });
  const ingest = async (payload: unknown) => {
    const d = newDelivery({ body: new TextEncoder().encode(JSON.stringify(payload)) });
    await opened.store.claim([d]);
    return d;
  };
  return { ...opened, dispatcher, log, ingest };
}

describe('the generated schema at dispatch', () => {
  it('parses once per attempt, shared by every handler without a schema of its own; a handler with one parses the stored payload', async () => {
    const { counter, schemas } = countedSchema();
    const seen: unknown[] = [];
    const t = setup(
      [
        defineHandler('pod.created', { name: 'a' }, (e) => void seen.push(e.payload)),
        defineHandler('pod.created', { name: 'b' }, (e) => void seen.push(e.payload)),
        defineHandler('*', { name: 'all' }, (e) => void seen.push(e.payload)),
        defineHandler('pod.created', { name: 'own', schema: z.looseObject({ extra: z.number() }) }, (e) => void seen.push(e.payload)),
      ],
      schemas,
    );
    const d = await t.ingest({ pod: { id: ID }, extra: 1 });
    await t.dispatcher.runUntilIdle();
    expect(counter.parses).toBe(1);
    expect(seen).toHaveLength(4);
    // The three without a schema share one parsed object.
    expect(new Set(seen.slice(0, 3)).size).toBe(1);
    expect(await t.store.get(d.eventId)).toMatchObject({ status: 'processed', attempts: 1 });
    t.close();
  });

  it('a payload that fails it makes the attempt invalid_payload and the delivery dead, without running those handlers', async () => {
    const { schemas } = countedSchema();
    const ran: string[] = [];
    const t = setup(
      [
        defineHandler('pod.created', { name: 'typed' }, () => void ran.push('typed')),
        defineHandler('pod.created', { name: 'ownSchema', schema: z.looseObject({}) }, () => void ran.push('ownSchema')),
      ],
      schemas,
    );
    const d = await t.ingest({ pod: { id: 'not-a-uuid' } });
    await t.dispatcher.runUntilIdle();
    expect(ran).toEqual(['ownSchema']);
    const row = await t.store.get(d.eventId);
    expect(row).toMatchObject({ status: 'dead', attempts: 1 });
    expect(row!.lastError).toBe('typed: invalid_payload: the payload does not fit the pod.created schema podhook schemas learned: pod.id: Invalid UUID');
    // Sorted by handler within the attempt.
    expect(await t.store.handlerAttempts([d.eventId])).toEqual([
      expect.objectContaining({ handler: 'ownSchema', outcome: 'succeeded' }),
      expect.objectContaining({ handler: 'typed', outcome: 'invalid_payload' }),
    ]);
    expect(t.log.records().find((l) => l.handler === 'typed' && l.msg === 'handler run')).toMatchObject({ outcome: 'invalid_payload' });

    // The way back: a schema learned again (here: one that takes it), then a replay of the dead letter.
    const replayer = createReplayer({ store: t.store, router: createRouter([defineHandler('pod.created', { name: 'typed' }, () => void ran.push('typed'))]), logger: t.log.logger, payloadSchemas: { 'pod.created': z.looseObject({}) } });
    expect((await replayer.replay(row!)).outcome).toBe('succeeded');
    expect(await t.store.get(d.eventId)).toMatchObject({ status: 'processed' });
    t.close();
  });

  it('leaves a type without a generated schema as it was: any JSON object', async () => {
    const ran: unknown[] = [];
    const t = setup([defineHandler('pod.created', { name: 'created' }, (e) => void ran.push(e.payload))], { 'pod.renewed': z.looseObject({ x: z.string() }) });
    const d = await t.ingest({ pod: { id: 'not-a-uuid' } });
    await t.dispatcher.runUntilIdle();
    expect(ran).toEqual([{ pod: { id: 'not-a-uuid' } }]);
    expect(await t.store.get(d.eventId)).toMatchObject({ status: 'processed' });
    t.close();
  });
});
