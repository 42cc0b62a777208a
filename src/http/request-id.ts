import type { MiddlewareHandler } from 'hono';
import { REQUEST_ID_PATTERN } from '../core/pods/request-id.js';

// The service's own rule (spec: Limits, "Request id"), kept with the pod client in the core.
export { REQUEST_ID_PATTERN };
export const REQUEST_ID_HEADER = 'x-request-id';

/** A caller's id of 8–64 `[A-Za-z0-9._-]` is kept; otherwise a new one is generated. */
export function resolveRequestId(offered: string | null | undefined, generator: () => string = () => crypto.randomUUID()): string {
  return offered && REQUEST_ID_PATTERN.test(offered) ? offered : generator();
}

export interface RequestIdOptions {
  headerName?: string;
  generator?: () => string;
  /** Responses that already carry the id (set by their route), left as they are. */
  answered?: (res: Response) => boolean;
}

/**
 * Echoes a caller's `x-request-id` of 8–64 `[A-Za-z0-9._-]`, otherwise generates one; sets it
 * on the response and in `c.var.requestId` so every log line of the request carries it.
 */
export function requestId({
  headerName = REQUEST_ID_HEADER,
  generator,
  answered,
}: RequestIdOptions = {}): MiddlewareHandler<{ Variables: { requestId: string } }> {
  return async function requestIdMiddleware(c, next) {
    const id = resolveRequestId(c.req.header(headerName), generator);
    c.set('requestId', id);
    await next();
    // Reading `c.res.headers` makes a plain-headers response build a `Headers` object.
    if (!answered?.(c.res)) c.res.headers.set(headerName, id);
  };
}
