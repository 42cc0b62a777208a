import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { REPO_ROOT } from './spawn-podhook.js';

export const COMPOSE_FILE = join(REPO_ROOT, 'deploy', 'compose.yaml');

export interface ComposeService {
  name: string;
  command: string[];
  environment: Record<string, string>;
}

interface ServiceEntry {
  build?: unknown;
  command?: unknown;
  environment?: unknown;
}

/**
 * The podhook services of deploy/compose.yaml (those built from this repository) with their
 * command and environment. A value the file takes from the host (`${VAR}`) must be given in
 * `overrides`, which also stands in for values that name compose's own hosts.
 */
export function composeReplicas(overrides: Record<string, string>): ComposeService[] {
  const doc = parse(readFileSync(COMPOSE_FILE, 'utf8'), { merge: true }) as { services: Record<string, ServiceEntry> };
  return Object.entries(doc.services)
    .filter(([, s]) => s.build !== undefined)
    .map(([name, s]) => {
      if (!Array.isArray(s.command)) throw new Error(`${name}: command must be a list (exec form)`);
      if (typeof s.environment !== 'object' || s.environment === null || Array.isArray(s.environment)) throw new Error(`${name}: environment must be a map`);
      const environment = Object.fromEntries(
        Object.entries(s.environment as Record<string, unknown>).map(([key, value]) => {
          const resolved = overrides[key] ?? String(value);
          if (resolved.includes('${')) throw new Error(`${name}: ${key} comes from the host; give it in overrides`);
          return [key, resolved];
        }),
      );
      return { name, command: s.command.map(String), environment };
    });
}
