import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { handlers as projectHandlers } from '../../handlers/index.js';
import type { HandlerDefinition } from '../core/events/define-handler.js';
import { UsageError } from './command.js';

/** The handler list: this project's handlers/, or a module's `handlers` (or default) export. */
export async function loadHandlers(module: string | undefined): Promise<readonly HandlerDefinition[]> {
  if (module === undefined) return projectHandlers;
  let loaded: { handlers?: unknown; default?: unknown };
  try {
    loaded = (await import(pathToFileURL(resolve(module)).href)) as typeof loaded;
  } catch (error) {
    throw new UsageError(`--handlers ${module} could not be loaded: ${(error as Error).message}`);
  }
  const list = loaded.handlers ?? loaded.default;
  const isHandler = (h: unknown) => typeof (h as HandlerDefinition)?.handle === 'function' && typeof (h as HandlerDefinition).name === 'string';
  if (!Array.isArray(list) || !list.every(isHandler)) {
    throw new UsageError(`--handlers ${module} must export a list of defineHandler(...) values as \`handlers\` (or as its default export)`);
  }
  return list as HandlerDefinition[];
}

