import { PodhookError } from '../errors.js';

/**
 * Codes a call to the service can end with: the service's own `error.code` values (spec: Errors),
 * plus the client's: `network_error` (no answer), `unexpected_response` (an answer that is not the
 * documented shape).
 */
export type PodsErrorCode =
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

/** Codes the same call cannot cure by being made again: a run that meets one goes `dead`. */
const NOT_RETRYABLE = new Set(['not_found', 'invalid_request', 'forbidden', 'capability_disabled', 'unauthorized', 'conflict', 'limit_exceeded', 'not_implemented']);

/**
 * Whether making the same call again later may succeed: `internal`, `network_error` and
 * `rate_limited` (after its wait) yes; the service's refusals of the call itself no; an answer not
 * in the documented shape only when it was a 5xx (a proxy's error page), since a 2xx one may have
 * done the work. A code the spec does not list is taken as retryable.
 */
export function isRetryable(code: string, status: number): boolean {
  if (NOT_RETRYABLE.has(code)) return false;
  if (code === 'unexpected_response') return status === 0 || status >= 500;
  return true;
}

export interface PodsErrorOptions {
  /** The `x-request-id` of the call (the service's echo, else ours); null when nothing was sent. */
  requestId: string | null;
  details?: Record<string, unknown>;
  /** The client operation (`queueAction`, `list`, …), when the error comes from one. */
  operation?: string;
  cause?: unknown;
}

/**
 * A failed call to the service: branch on `code`, never on `message` (the service's prose).
 * `retryable` says whether the same call may succeed later; `status` is the HTTP status, 0 when
 * there was no answer (or nothing was sent: `requestId` is then null).
 */
export class PodsError extends PodhookError {
  declare readonly code: PodsErrorCode;
  /** The service's `x-request-id` for this call (ours when it sent none), for support; null when nothing was sent. */
  readonly requestId: string | null;
  readonly retryable: boolean;
  /** The client operation it came from (`queueAction`, `list`, …). */
  operation?: string;

  constructor(code: PodsErrorCode, status: number, message: string, { requestId, details, operation, cause }: PodsErrorOptions) {
    super(code, status, message, { details, cause });
    this.requestId = requestId;
    this.retryable = isRetryable(code, status);
    if (operation !== undefined) this.operation = operation;
  }

  /** A handler's run that meets it goes `dead` (the dispatcher reads this): the same call cannot succeed later. */
  get permanent(): boolean {
    return !this.retryable;
  }

  /** The error as a run records it (last_error, the dead letter): the code and the request id with the message. */
  toRunError(): string {
    return `PodsError: ${this.code}${this.operation ? ` in ${this.operation}` : ''}${this.requestId ? ` (request id ${this.requestId})` : ''}: ${this.message}`;
  }

  /** `details.retry_after_seconds` of a `rate_limited` answer, when it is a number. */
  get retryAfterSeconds(): number | undefined {
    const offered = Number(this.details?.retry_after_seconds);
    return this.details?.retry_after_seconds !== undefined && Number.isFinite(offered) && offered >= 0 ? offered : undefined;
  }
}

/**
 * The account's bucket has no token within the time the caller can wait: from podhook's own
 * limiter (nothing was sent) or after the service's `429` (`requestId` and `details` are that
 * answer's). `retryAt` is when to try again (epoch ms). A handler's run is parked until then.
 */
export class PodsRateLimited extends PodsError {
  declare readonly code: 'rate_limited';
  readonly retryAt: number;
  /** The bucket it waits on: `writes`, `reads` or `key_mints`. */
  readonly bucket: string;

  constructor({ bucket, retryAt, message, ...options }: PodsErrorOptions & { bucket: string; retryAt: number; message?: string }) {
    super('rate_limited', 429, message ?? `the account's ${bucket} bucket has no token before ${new Date(retryAt).toISOString()}`, options);
    this.bucket = bucket;
    this.retryAt = retryAt;
  }

  /** A handler's run that meets it is parked until then (no attempt counted), not failed. */
  get parkUntil(): number {
    return this.retryAt;
  }
}
