import { PodhookError } from '../errors.js';
import { PROTO_KEY } from './generate-module.js';
import { PayloadShapesSchema, type PayloadShapes } from './shape.js';

/** A generated module whose `PAYLOAD_SHAPES` cannot be read back. */
export class PayloadModuleError extends PodhookError {
  constructor(message: string) {
    super('invalid_payload_module', 400, message);
  }
}

const DECLARATION = /export const PAYLOAD_SHAPES\b[^=]*=\s*/;

/**
 * The `PAYLOAD_SHAPES` a generated module embeds, read from its text: the JSON object after
 * `export const PAYLOAD_SHAPES … =` (a `"__proto__"` key written computed), parsed and checked. The module is not run (no TypeScript
 * loader is needed, and nothing in the file executes). Throws a `PayloadModuleError` saying what is wrong.
 */
export function readPayloadModule(text: string): PayloadShapes {
  const declaration = DECLARATION.exec(text);
  if (declaration === null) throw new PayloadModuleError('no `export const PAYLOAD_SHAPES = {…}`: is it a module `podhook schemas` generated?');
  const start = declaration.index + declaration[0].length;
  const end = endOfJsonObject(text, start);
  if (end === -1) throw new PayloadModuleError('PAYLOAD_SHAPES is not a JSON object');
  let json: unknown;
  try {
    json = JSON.parse(text.slice(start, end).replaceAll(`${PROTO_KEY}:`, '"__proto__":'));
  } catch (error) {
    throw new PayloadModuleError(`PAYLOAD_SHAPES is not JSON: ${(error as Error).message}`);
  }
  const parsed = PayloadShapesSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new PayloadModuleError(`${['PAYLOAD_SHAPES', ...issue.path.map(String)].join('.')}: ${issue.message}`);
  }
  // The JSON as parsed, not zod's copy: a record's copy would turn a "__proto__" key into a prototype.
  return json as PayloadShapes;
}

/** The index just past the JSON object that starts at `start`, or -1. */
function endOfJsonObject(text: string, start: number): number {
  if (text[start] !== '{') return -1;
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') {
      depth--;
      if (depth === 0) return i + 1;
    }
  }
  return -1;
}
