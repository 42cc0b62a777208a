import { EVENT_TYPES } from './event-types.js';
import { isDefinedHandler } from './define-handler.js';
import { patternMatches } from '../dispatch/router.js';

/** One thing wrong with a handler registry, and where. */
export interface RegistryProblem {
  /** The module the entry comes from (e.g. `handlers/pod-created.ts`), or the registry's own. */
  module: string;
  /** The entry's position in the list, from 0. */
  index: number;
  message: string;
}

export interface CheckRegistryOptions {
  /** The registry module, named when an entry's own module is unknown or the list itself is wrong. */
  registry: string;
  /** The module that exports this entry, when known. */
  moduleOf?: (entry: unknown) => string | undefined;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'function') return `a function${value.name ? ` (${value.name})` : ''}`;
  return typeof value === 'object' ? 'a plain object' : `${typeof value} ${JSON.stringify(value)}`;
}

/**
 * Checks a handler list as the router will use it: every entry made by `defineHandler`, names
 * unique (they key the per-handler ledger), every pattern taking at least one event type.
 * An empty list is valid: every delivery is then stored as `ignored`.
 */
export function checkHandlerRegistry(entries: unknown, { registry, moduleOf = () => undefined }: CheckRegistryOptions): RegistryProblem[] {
  if (!Array.isArray(entries)) {
    return [{ module: registry, index: -1, message: `must export \`handlers\`, an array of defineHandler(...) values (got ${describe(entries)})` }];
  }
  const problems: RegistryProblem[] = [];
  const firstByName = new Map<string, number>();
  entries.forEach((entry: unknown, index) => {
    const module = moduleOf(entry) ?? registry;
    const at = (message: string) => problems.push({ module, index, message });
    if (!isDefinedHandler(entry)) {
      at(`entry ${index} is ${describe(entry)}, not a handler made by defineHandler(pattern, fn) (import { defineHandler } from 'podhook')`);
      return;
    }
    const earlier = firstByName.get(entry.name);
    if (earlier !== undefined) {
      at(`entry ${index}: the name "${entry.name}" is already used by entry ${earlier}; names key the per-handler ledger: give it another with defineHandler(pattern, { name }, fn)`);
    } else {
      firstByName.set(entry.name, index);
    }
    if (!EVENT_TYPES.some((type) => patternMatches(entry.pattern, type))) {
      at(`entry ${index} ("${entry.name}"): the pattern "${String(entry.pattern)}" takes none of the ${EVENT_TYPES.length} event types (${EVENT_TYPES.join(', ')})`);
    }
  });
  return problems;
}

/** The problems as lines for a person: `handlers/x.ts: entry 2 is ...`. */
export function formatRegistryProblems(problems: readonly RegistryProblem[]): string {
  return problems.map((p) => `${p.module}: ${p.message}`).join('\n');
}

/** The one-paragraph refusal of an invalid registry: its module, then one line per problem. */
export const invalidRegistryMessage = (registry: string, problems: readonly RegistryProblem[]): string =>
  `the handler registry ${registry} is not valid:\n${formatRegistryProblems(problems)}`;
