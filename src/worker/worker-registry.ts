import { invalidRegistryMessage } from '../core/events/check-registry.js';
import { checkRegistryModule, type RegistryModule } from '../core/events/registry-module.js';
import { ConfigError } from '../core/errors.js';
import type { RuntimeOptions } from '../runtime/wire-receiver.js';

/**
 * A registry module the Worker's bundle imports statically (handlers/index.ts), read as the Node
 * loader reads one: its handlers and the payload exports `podhook schemas` generated, checked.
 * Throws a ConfigError naming the module and every problem, so a broken registry stops the
 * Worker at start (and `wrangler deploy`'s validation) rather than at its first delivery.
 */
export function workerRegistry(module: RegistryModule, registry = 'handlers/index.ts'): Required<Pick<RuntimeOptions, 'handlers' | 'payloads'>> {
  const { handlers, payloads, problems } = checkRegistryModule(module, { registry });
  if (problems.length > 0) throw new ConfigError(invalidRegistryMessage(registry, problems));
  return { handlers, payloads };
}
