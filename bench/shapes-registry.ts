/**
 * The `podhook-shapes` target's registry: the project's handlers, plus a module `podhook schemas`
 * generated from the bench's own payloads (so every delivery of the load fits it, as most real
 * traffic does), compiled to JavaScript beside the build (dist/bench/podhook-shapes/). Against
 * `podhook` (the shipped module, which learned nothing) it measures what a learned module costs
 * per delivery: the drift check at the door and the generated schema's parse at dispatch.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { generatePayloadModule, inferShapes } from '../src/core/shapes/index.js';
import { ROOT } from './harness.js';
import { eventBody } from './load-client.js';

/** The registry module `--handlers` loads, relative to the repository. */
export const SHAPES_REGISTRY = 'dist/bench/podhook-shapes/index.js';

/** Learns the shapes of `samples` bench deliveries of `eventType` and writes the registry (after `npm run build`). */
export function writeShapesRegistry({ samples = 200, bodyBytes = 1024, eventType = 'pod.status.changed' } = {}): void {
  const shapes = inferShapes(
    Array.from({ length: samples }, (_, i) => ({ eventType, payload: JSON.parse(eventBody(bodyBytes, randomUUID()).toString('utf8')) as unknown, receivedAt: i })),
  );
  const js = (source: string) => ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.ES2022, target: ts.ScriptTarget.ES2022 } }).outputText;
  const dir = join(ROOT, 'dist/bench/podhook-shapes');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, '_payloads.js'), js(generatePayloadModule(shapes)));
  writeFileSync(
    join(dir, 'index.js'),
    `export { handlers } from '../../handlers/index.js';\nexport { payloadSchemas, PAYLOAD_SHAPES as payloadShapes, payloadFields } from './_payloads.js';\n`,
  );
}
