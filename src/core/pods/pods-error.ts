import { PodhookError } from '../errors.js';

/** The service's own `error.code` values (spec: Errors). */
export const SERVICE_ERROR_CODES = [
  'invalid_request',
  'unauthorized',
  'forbidden',
  'not_found',
  'conflict',
  'limit_exceeded',
  'capability_disabled',
  'rate_limited',
  'not_implemented',
  'internal',
] as const;

/**
 * The client's own codes: `network_error` (no answer), `unexpected_response` (an answer that is
 * not the documented shape, or pages that never end), `answer_too_large` (an answer over
 * `MAX_ANSWER_BYTES`, cut there), `redirect_refused` (a 3xx: the API key never follows one),
 * `not_configured` (no API key to send).
 */
export const CLIENT_ERROR_CODES = ['network_error', 'unexpected_response', 'answer_too_large', 'redirect_refused', 'not_configured'] as const;

/** Every code podhook knows; anything else the service sends is kept on the error, but counted as `other` in metrics. */
export const KNOWN_PODS_ERROR_CODES: readonly string[] = [...SERVICE_ERROR_CODES, ...CLIENT_ERROR_CODES];

/**
 * Codes a call to the service can end with: the service's own `error.code` values (spec: Errors),
 * plus the client's (`CLIENT_ERROR_CODES`). A code the spec does not list is kept as the service sent it.
 */
export type PodsErrorCode = (typeof SERVICE_ERROR_CODES)[number] | (typeof CLIENT_ERROR_CODES)[number] | (string & {});

/** A code as a metric label: one of the known codes (or `ok`), else `other` (the service's codes are its to choose). */
export function podsCodeLabel(code: string): string {
  return code === 'ok' || KNOWN_PODS_ERROR_CODES.includes(code) ? code : 'other';
}

/** Codes the same call cannot cure by being made again: a run that meets one goes `dead`. */
const NOT_RETRYABLE = new Set([
  'not_found',
  'invalid_request',
  'forbidden',
  'capability_disabled',
  'unauthorized',
  'conflict',
  'limit_exceeded',
  'not_implemented',
  'answer_too_large',
  'redirect_refused',
]);

/** The bounds `details.retry_after_seconds` is read within (seconds). */
export const RETRY_AFTER_BOUNDS = { min: 1, max: 3_600 } as const;
/** When a `429` carries no `retry_after_seconds`, this long is waited. */
export const DEFAULT_RETRY_AFTER_SECONDS = 60;

/**
 * A `429`'s `retry_after_seconds` as podhook waits it: a whole number of seconds from 1 to 3,600
 * (`RETRY_AFTER_BOUNDS`; a fraction rounded up, 0 read as 1); absent: 60 s; anything else (past
 * the bound, negative, not a number) is taken as the bound, 3,600 s. An answer can never hold the
 * account's buckets longer than that, nor make a time no `Date` can hold.
 */
export function boundRetryAfterSeconds(value: unknown): number {
  if (value === undefined || value === null) return DEFAULT_RETRY_AFTER_SECONDS;
  const n = typeof value === 'number' ? value : typeof value === 'string' && /^\d{1,10}(\.\d+)?$/.test(value.trim()) ? Number(value) : NaN;
  if (!Number.isFinite(n) || n < 0) return RETRY_AFTER_BOUNDS.max;
  return Math.min(RETRY_AFTER_BOUNDS.max, Math.max(RETRY_AFTER_BOUNDS.min, Math.ceil(n)));
}

/** An epoch-ms time as ISO text, or `an unknown time` when no `Date` can hold it (never a RangeError). */
export function isoTime(ms: number): string {
  const date = new Date(ms);
  return Number.isNaN(date.getTime()) ? 'an unknown time' : date.toISOString();
}

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

  /**
   * How long a `rate_limited` answer asks to wait, in seconds: `details.retry_after_seconds`
   * within `RETRY_AFTER_BOUNDS` (`boundRetryAfterSeconds`; 60 when absent). Undefined for other codes.
   */
  get retryAfterSeconds(): number | undefined {
    return this.code === 'rate_limited' ? boundRetryAfterSeconds(this.details?.retry_after_seconds) : undefined;
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
    super('rate_limited', 429, message ?? `the account's ${bucket} bucket has no token before ${isoTime(retryAt)}`, options);
    this.bucket = bucket;
    this.retryAt = retryAt;
  }

  /** A handler's run that meets it is parked until then (no attempt counted), not failed. */
  get parkUntil(): number {
    return this.retryAt;
  }
}
