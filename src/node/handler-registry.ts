import { existsSync, readFileSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { HandlerDefinition } from '../core/events/define-handler.js';
import { ConfigError } from '../core/errors.js';
import { invalidRegistryMessage, type RegistryProblem } from '../core/events/check-registry.js';
import { checkRegistryModule, type RegistryModule, type RegistryPayloads } from '../core/events/registry-module.js';

/** The project's registry: handlers/index.ts beside src/ (dist/handlers/index.js once compiled). */
export const PROJECT_REGISTRY = new URL('../../handlers/index.js', import.meta.url);

export interface LoadedRegistry {
  /** The registry module as a person reads it (relative to the working directory). */
  registry: string;
  /** The registry module as it was imported (handler threads import it too). */
  module: URL;
  handlers: readonly HandlerDefinition[];
  /** What `podhook schemas` generated, as the registry re-exports it (`payloadSchemas`, `payloadShapes`, `payloadFields`). */
  payloads: RegistryPayloads;
  /** What `checkRegistryModule` found, each naming the module the entry comes from. */
  problems: RegistryProblem[];
}

/** A registry load that failed or found problems; the message names the module and what is wrong. */
export class HandlerRegistryError extends ConfigError {
  constructor(message: string, readonly problems: RegistryProblem[] = []) {
    super(message);
    this.name = 'HandlerRegistryError';
  }
}

/** The source file behind a module URL: tsx runs `x.ts` for an import of `x.js`. */
function sourceFile(url: URL): string | undefined {
  const path = fileURLToPath(url);
  const candidates = path.endsWith('.js') ? [path, `${path.slice(0, -3)}.ts`] : [path];
  return candidates.find((p) => existsSync(p));
}

/** A path as a person reads it: relative to the working directory when inside it. */
function shown(path: string): string {
  const rel = relative(process.cwd(), path);
  return rel.startsWith('..') || rel === '' ? path : rel;
}

const RELATIVE_IMPORT = /(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s*['"](\.{1,2}\/[^'"]+)['"]/g;

/**
 * Which module exports each value the registry lists: the registry's relative imports are
 * loaded (the same instances it loaded) and their exports indexed, so a problem names
 * `handlers/pod-created.ts` rather than "entry 4".
 */
async function exportOrigins(registryUrl: URL, registrySource: string | undefined): Promise<Map<unknown, string>> {
  const origins = new Map<unknown, string>();
  if (!registrySource) return origins;
  const text = readFileSync(registrySource, 'utf8');
  for (const match of text.matchAll(RELATIVE_IMPORT)) {
    const url = new URL(match[1]!, registryUrl);
    const file = sourceFile(url);
    if (!file) continue;
    try {
      const exports = (await import(url.href)) as Record<string, unknown>;
      for (const value of Object.values(exports)) {
        if (!origins.has(value)) origins.set(value, shown(file));
        if (Array.isArray(value)) for (const v of value) if (!origins.has(v)) origins.set(v, shown(file));
      }
    } catch {
      // The registry itself imported it; a failure here only costs the module's name.
    }
  }
  return origins;
}

/**
 * Loads a handler registry (default: the project's handlers/index.ts): its `handlers` export, or
 * its default export, and the payload exports `podhook schemas` generated, checked by
 * `checkRegistryModule`. Never throws for problems in the module (the caller decides); throws a
 * HandlerRegistryError when the module cannot be loaded.
 */
export async function loadHandlerRegistry(module?: string): Promise<LoadedRegistry> {
  const url = module === undefined ? PROJECT_REGISTRY : pathToFileURL(resolve(module));
  const file = sourceFile(url);
  const registry = shown(file ?? fileURLToPath(url));
  let loaded: RegistryModule;
  try {
    loaded = (await import(url.href)) as RegistryModule;
  } catch (error) {
    throw new HandlerRegistryError(`${registry} could not be loaded: ${(error as Error).message}`);
  }
  const origins = await exportOrigins(url, file);
  return { registry, module: url, ...checkRegistryModule(loaded, { registry, moduleOf: (entry) => origins.get(entry) }) };
}

/** Loads a registry and requires it to be valid, or throws a HandlerRegistryError listing every problem. */
export async function loadValidRegistry(module?: string): Promise<LoadedRegistry> {
  const loaded = await loadHandlerRegistry(module);
  if (loaded.problems.length > 0) {
    throw new HandlerRegistryError(invalidRegistryMessage(loaded.registry, loaded.problems), loaded.problems);
  }
  return loaded;
}

/** The handlers of a valid registry (see `loadValidRegistry`). */
export const loadValidHandlers = async (module?: string): Promise<readonly HandlerDefinition[]> => (await loadValidRegistry(module)).handlers;
