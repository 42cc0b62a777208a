import { describe, expect, it } from 'vitest';
import { checkHandlerRegistry, formatRegistryProblems } from '../../src/core/events/check-registry.js';
import { defineHandler } from '../../src/index.js';
import { HandlerRegistryError, loadHandlerRegistry, loadValidHandlers } from '../../src/node/handler-registry.js';
import { loadValidRegistry } from '../../src/node/handler-registry.js';
import { workerRegistry } from '../../src/worker/worker-registry.js';
import * as badPayloads from '../fixtures/registries/bad-payloads.js';
import { BAD_PAYLOADS_REGISTRY, BROKEN_REGISTRY, EMPTY_REGISTRY, PARTIAL_REGISTRY } from '../fixtures/registry-paths.js';

describe("the project's registry (handlers/index.ts)", () => {
  // The one check of handlers/: whatever it lists. A team may add, change or delete modules.
  it('lists only defineHandler values, with unique names, each taking at least one event type', async () => {
    const { problems } = await loadHandlerRegistry();
    expect(formatRegistryProblems(problems)).toBe('');
  });

  it('passes on the payload module podhook schemas generated (handlers/_payloads.ts)', async () => {
    const { payloads } = await loadHandlerRegistry();
    expect(Object.keys(payloads.schemas ?? {})).toHaveLength(11);
    expect(payloads.shapes?.format).toBe('podhook.shapes.v1');
    expect(payloads.fields).toBeDefined();
  });
});

describe('the registry check', () => {
  it('names the module and what is wrong for each bad entry', async () => {
    const { problems, registry } = await loadHandlerRegistry(BROKEN_REGISTRY);
    expect(registry).toMatch(/test\/fixtures\/registries\/broken\/index\.ts$/);
    const lines = formatRegistryProblems(problems).split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(/^test\/fixtures\/registries\/broken\/not-defined\.ts: entry 0 is a function \(forgotDefineHandler\), not a handler made by defineHandler/);
    expect(lines[1]).toMatch(/^test\/fixtures\/registries\/broken\/same-name\.ts: entry 2: the name "notify" is already used by entry 1/);
    expect(lines[2]).toMatch(/^test\/fixtures\/registries\/broken\/no-type\.ts: entry 3 \("backups"\): the pattern "pod\.backups\.\*" takes none of the 11 event types/);
  });

  it('refuses an invalid registry where one is loaded to run, listing every problem', async () => {
    const error = await loadValidHandlers(BROKEN_REGISTRY).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HandlerRegistryError);
    expect((error as HandlerRegistryError).problems).toHaveLength(3);
    expect((error as Error).message).toMatch(/^the handler registry .*broken\/index\.ts is not valid:\n.*not-defined\.ts: /);
  });

  it('refuses payload exports that are not what podhook schemas generates, naming the registry and each export', async () => {
    const error = await loadValidRegistry(BAD_PAYLOADS_REGISTRY).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HandlerRegistryError);
    expect((error as Error).message.split('\n')).toEqual([
      expect.stringMatching(/^the handler registry .*test\/fixtures\/registries\/bad-payloads\.ts is not valid:$/),
      expect.stringMatching(/bad-payloads\.ts: `payloadSchemas` has "pod\.teleported", which is not one of the 11 event types$/),
      expect.stringMatching(/bad-payloads\.ts: payloadShapes\.format: unsupported format "podhook\.shapes\.v9" \(this podhook reads podhook\.shapes\.v1\)/),
      expect.stringMatching(/bad-payloads\.ts: payloadFields\.pod\.created\.podId: .*expected array/),
    ]);
    // The Worker's bundle reads its registry the same way, and refuses it at start.
    expect(() => workerRegistry(badPayloads, 'handlers/index.ts')).toThrow(/^the handler registry handlers\/index\.ts is not valid:\nhandlers\/index\.ts: `payloadSchemas` has "pod\.teleported"/);
    // A registry without payload exports runs as before: every payload any JSON object.
    expect((await loadValidRegistry(PARTIAL_REGISTRY)).payloads).toEqual({});
  });

  it('accepts an empty registry and a partial one', async () => {
    expect(await loadValidHandlers(EMPTY_REGISTRY)).toEqual([]);
    expect((await loadValidHandlers(PARTIAL_REGISTRY)).map((h) => [h.name, h.pattern])).toEqual([
      ['welcome', 'pod.created'],
      ['archiveBackups', 'pod.backup.*'],
    ]);
  });

  it('refuses a registry that is not a list, or a module that does not load', async () => {
    expect(checkHandlerRegistry({ handlers: [] }, { registry: 'handlers/index.ts' })).toEqual([
      { module: 'handlers/index.ts', index: -1, message: 'must export `handlers`, an array of defineHandler(...) values (got a plain object)' },
    ]);
    const handMade = { pattern: 'pod.created', name: 'handMade', handle: async () => {} };
    expect(checkHandlerRegistry([handMade], { registry: 'r.ts' })[0]!.message).toMatch(/entry 0 is a plain object, not a handler made by defineHandler/);
    // A spread copy keeps defineHandler's mark (a way to rename one).
    expect(checkHandlerRegistry([{ ...defineHandler('pod.created', async function copied() {}), name: 'renamed' }], { registry: 'r.ts' })).toEqual([]);
    await expect(loadHandlerRegistry('/no/such/registry.ts')).rejects.toThrow(/^\/no\/such\/registry\.ts could not be loaded: /);
  });
});
