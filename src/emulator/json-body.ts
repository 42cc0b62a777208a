import type { Context } from 'hono';
import { PodhookError } from '../core/errors.js';

/** The request's JSON body; `invalid_request` when it is not JSON. With `emptyAs`, an empty body reads as that value (a body the spec leaves optional). */
export async function jsonBody(c: Context, { emptyAs }: { emptyAs?: unknown } = {}): Promise<unknown> {
  const text = await c.req.text();
  if (emptyAs !== undefined && text.trim() === '') return emptyAs;
  try {
    return JSON.parse(text);
  } catch {
    throw new PodhookError('invalid_request', 400, 'The body must be JSON.', { details: { field: 'body' } });
  }
}
