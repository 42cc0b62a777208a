import { countWork } from '../observability/work-count.js';

// ignoreBOM: false is the default, spelled out because workerd's typings require it.
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/** Parses a stored body as handlers see it: strict UTF-8, then JSON. */
export function parseDeliveryBody(body: Uint8Array): { ok: true; payload: unknown } | { ok: false; error: string } {
  countWork('body_parse');
  try {
    return { ok: true, payload: JSON.parse(utf8.decode(body)) };
  } catch (error) {
    return { ok: false, error: `invalid_json: ${(error as Error).message}` };
  }
}

/** A stored body handlers cannot read (not UTF-8 JSON): the attempt's delivery is dead. */
export class InvalidBodyError extends Error {
  constructor(readonly detail: string) {
    super(detail);
    this.name = 'InvalidBodyError';
  }
}

/**
 * An attempt's payload on the receiver, parsed from the body at most once and only when first
 * asked (`parsed`: what ingest parsed already). `get` throws an `InvalidBodyError` when the body
 * cannot be parsed; `known` is the payload when it is parsed already (for a runner in this thread).
 */
export function lazyPayload(body: Uint8Array, parsed: unknown): { get: () => unknown; known: () => unknown } {
  let result: ReturnType<typeof parseDeliveryBody> | undefined = parsed === undefined ? undefined : { ok: true, payload: parsed };
  return {
    get: () => {
      result ??= parseDeliveryBody(body);
      if (!result.ok) throw new InvalidBodyError(result.error);
      return result.payload;
    },
    known: () => (result?.ok ? result.payload : undefined),
  };
}
