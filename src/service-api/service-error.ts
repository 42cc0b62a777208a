import { PodhookError } from '../core/errors.js';

/**
 * Codes a service call can end with: the service's own `error.code` values (spec: Errors), plus
 * two of the client's: `network_error` (no answer) and `unexpected_response` (an answer that is
 * not the documented shape).
 */
export type ServiceErrorCode =
  | 'invalid_request'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'conflict'
  | 'limit_exceeded'
  | 'capability_disabled'
  | 'rate_limited'
  | 'not_implemented'
  | 'internal'
  | 'network_error'
  | 'unexpected_response'
  | (string & {});

/** A failed call to the service: branch on `code`, never on `message` (the service's prose). */
export class ServiceError extends PodhookError {
  declare readonly code: ServiceErrorCode;
  /** The service's `x-request-id` for this call (ours when it sent none), for support. */
  readonly requestId: string;

  constructor(
    code: ServiceErrorCode,
    status: number,
    message: string,
    { requestId, details, cause }: { requestId: string; details?: Record<string, unknown>; cause?: unknown },
  ) {
    super(code, status, message, { details, cause });
    this.requestId = requestId;
  }
}
