/**
 * Errors carry a stable `code` (what clients branch on) and an HTTP `status`; messages are
 * prose for people. One place (the app's error handler) turns them into the service's own
 * error shape `{ error: { code, message, details? } }`.
 */
export class PodhookError extends Error {
  readonly code: string;
  readonly status: number;
  /** Machine-readable reason for logs and metrics; never sent to the client when it would help an attacker. */
  readonly reason: string;
  readonly details?: Record<string, unknown>;

  constructor(
    code: string,
    status: number,
    message: string,
    options: { reason?: string; details?: Record<string, unknown>; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.status = status;
    this.reason = options.reason ?? code;
    this.details = options.details;
  }
}

/** 400: a header is missing or malformed. */
export class InvalidRequestError extends PodhookError {
  constructor(message: string, reason: string, details?: Record<string, unknown>) {
    super('invalid_request', 400, message, { reason, details });
  }
}

/** 401: no valid signature, or a timestamp outside the window. The body never says which. */
export class UnauthorizedError extends PodhookError {
  constructor(reason: string) {
    super('unauthorized', 401, 'The delivery could not be authenticated.', { reason });
  }
}

/** 413: the body is larger than the configured cap. */
export class PayloadTooLargeError extends PodhookError {
  constructor(limit: number) {
    super('payload_too_large', 413, `The body exceeds ${limit} bytes.`, {
      details: { max_bytes: limit },
    });
  }
}

/** 503: the receiver cannot take the delivery now (store down, no secret); the sender retries. */
export class UnavailableError extends PodhookError {
  readonly retryAfterSeconds: number;
  constructor(message: string, reason: string, options: { retryAfterSeconds?: number; cause?: unknown } = {}) {
    super('unavailable', 503, message, { reason, cause: options.cause });
    this.retryAfterSeconds = options.retryAfterSeconds ?? 5;
  }
}

/** A configuration value is invalid; the message names the variable. */
export class ConfigError extends PodhookError {
  constructor(message: string) {
    super('invalid_config', 500, message);
  }
}
