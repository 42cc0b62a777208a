import type { MiddlewareHandler } from 'hono';

/** The service's own rule for request ids (spec: Limits, "Request id"). */
export const REQUEST_ID_PATTERN = /^[A-Za-z0-9._-]{8,64}$/;

export interface RequestIdOptions {
  headerName?: string;
  generator?: () => string;
}

/**
 * Echoes a caller's `x-request-id` of 8–64 `[A-Za-z0-9._-]`, otherwise generates one; sets it
 * on the response and in `c.var.requestId` so every log line of the request carries it.
 */
export function requestId({
  headerName = 'x-request-id',
  generator = () => crypto.randomUUID(),
}: RequestIdOptions = {}): MiddlewareHandler<{ Variables: { requestId: string } }> {
  return async function requestIdMiddleware(c, next) {
    const offered = c.req.header(headerName);
    const id = offered && REQUEST_ID_PATTERN.test(offered) ? offered : generator();
    c.set('requestId', id);
    await next();
    c.res.headers.set(headerName, id);
  };
}
