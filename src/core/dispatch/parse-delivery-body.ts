// ignoreBOM: false is the default, spelled out because workerd's typings require it.
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/** Parses a stored body as handlers see it: strict UTF-8, then JSON. */
export function parseDeliveryBody(body: Uint8Array): { ok: true; payload: unknown } | { ok: false; error: string } {
  try {
    return { ok: true, payload: JSON.parse(utf8.decode(body)) };
  } catch (error) {
    return { ok: false, error: `invalid_json: ${(error as Error).message}` };
  }
}
