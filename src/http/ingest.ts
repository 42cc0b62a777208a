import { InvalidRequestError, PayloadTooLargeError, PodhookError, UnavailableError } from '../core/errors.js';
import type { IngestOutcome } from '../core/ingest/ingest-outcome.js';
import { checkDeclaredLength } from './read-body.js';
import type { Logger } from '../core/observability/logger.js';
import { EVENT_ID_HEADER, EVENT_TYPE_HEADER, type HeaderSource, type ReceiveDelivery } from '../core/ingest/receive-delivery.js';

/** One ingest request as any transport presents it. */
export interface IngestRequest {
  headers: HeaderSource;
  requestId: string;
  /** The raw body, capped at `maxBytes` (throws `PayloadTooLargeError` / `InvalidRequestError`). */
  readBody(maxBytes: number): Promise<Uint8Array>;
}

/** A JSON answer: status, body, and headers beyond content type and request id. */
export interface JsonAnswer {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

export interface IngestHandlerOptions {
  receive: ReceiveDelivery;
  logger: Logger;
  maxBodyBytes: number;
  /** Observes each ingest answer (metrics). */
  onOutcome?: (outcome: IngestOutcome) => void;
}

export type IngestHandler = (request: IngestRequest) => Promise<JsonAnswer>;

const UUID_LIKE = /^[0-9a-fA-F-]{36}$/;

/** JSON body in the service's own error shape (spec: Errors). */
export function errorBody(code: string, message: string, details?: Record<string, unknown>) {
  return { error: details ? { code, message, details } : { code, message } };
}

/** The answer for a refusal: status, error shape, `Retry-After` on 503, `Connection: close` on 413. */
export function errorAnswer(error: PodhookError): JsonAnswer {
  const headers: Record<string, string> = {};
  if (error instanceof UnavailableError) headers['retry-after'] = String(error.retryAfterSeconds);
  // The rest of an oversized body is never read: close the connection rather than reuse it.
  if (error instanceof PayloadTooLargeError) headers.connection = 'close';
  return { status: error.status, body: errorBody(error.code, error.message, error.details), headers };
}

export const INTERNAL_ERROR_ANSWER: JsonAnswer = { status: 500, body: errorBody('internal', 'Internal error.') };

/**
 * `POST <webhookPath>`, free of any framework: read the capped body, receive it (verify, window,
 * store), answer 200 `{received, event_id, duplicate}` (plus `conflict: true` when quarantined) or the refusal, and write one log line.
 * Hono mounts it in every runtime; the Node server also calls it straight from `node:http`.
 * Never throws.
 */
export function createIngestHandler({ receive, logger, maxBodyBytes, onOutcome }: IngestHandlerOptions): IngestHandler {
  return async function ingest({ headers, requestId, readBody }: IngestRequest): Promise<JsonAnswer> {
    const started = performance.now();
    let bodyRead = false;
    const read = async () => {
      const body = await readBody(maxBodyBytes).catch(cutOff);
      bodyRead = true;
      return body;
    };
    try {
      // Cheapest first: a declared length over the cap is refused before anything else.
      checkDeclaredLength(headers.get('content-length'), headers.get('transfer-encoding') !== null, maxBodyBytes);
      const result = await receive(headers, read);
      const outcome = result.duplicate ? 'duplicate' : result.status === 'queued' ? 'accepted' : result.status;
      const latencyMs = performance.now() - started;
      const line = { request_id: requestId, event_id: result.eventId, event_type: result.eventType, outcome, status: 200, latency_ms: round(latencyMs) };
      if (result.conflict) {
        const { storedAs, conflictWith } = result.conflict;
        const against = conflictWith && { event_id: conflictWith.eventId, event_type: conflictWith.eventType };
        logger.warn({ ...line, stored_as: storedAs, conflict_with: against }, 'delivery');
      } else {
        logger.info(line, 'delivery');
      }
      onOutcome?.({ outcome, status: 200, eventType: result.eventType, eventId: result.eventId, latencyMs });
      const body = { received: true, event_id: result.eventId, duplicate: result.duplicate };
      return { status: 200, body: result.conflict ? { ...body, conflict: true } : body };
    } catch (error) {
      if (!(error instanceof PodhookError)) {
        logger.error({ request_id: requestId, err: describeCause(error) }, 'unhandled error');
        return INTERNAL_ERROR_ANSWER;
      }
      const latencyMs = performance.now() - started;
      const rawId = headers.get(EVENT_ID_HEADER);
      const eventType = headers.get(EVENT_TYPE_HEADER)?.slice(0, 100);
      const line = {
        request_id: requestId,
        // Only header values that passed a shape check are logged; never the body or the signature.
        event_id: rawId && UUID_LIKE.test(rawId) ? rawId.toLowerCase() : undefined,
        event_type: eventType,
        outcome: 'rejected',
        status: error.status,
        reason: error.reason,
        latency_ms: round(latencyMs),
      };
      // A store that fails unexpectedly is an error; a refusal the server chose (store gone,
      // already logged once; too busy) is not, and must not let a client flood error lines.
      if (error.status >= 500 && error.reason === 'store_unavailable') logger.error({ ...line, err: describeCause(error) }, 'delivery');
      else if (error.status >= 500) logger.warn(line, 'delivery');
      else if (error.status === 401) logger.warn(line, 'delivery');
      else logger.info(line, 'delivery');
      onOutcome?.({ outcome: 'rejected', status: error.status, reason: error.reason, eventType, eventId: line.event_id, latencyMs });
      const answer = errorAnswer(error);
      // A body left unread (refused before or while reading) is not drained: the connection closes.
      if (!bodyRead && mayHaveBody(headers)) answer.headers = { ...answer.headers, connection: 'close' };
      return answer;
    }
  };
}

function mayHaveBody(headers: HeaderSource): boolean {
  const length = headers.get('content-length');
  return headers.get('transfer-encoding') !== null || (length !== null && length !== '0');
}

/** A body that could not be read is the client's doing (it hung up): not an error of ours. */
function cutOff(error: unknown): never {
  if (error instanceof PodhookError) throw error;
  throw new InvalidRequestError('The request body was cut off.', 'body_incomplete');
}

function round(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}

/** Error name, code and message for logs; the chain of causes, never request data. */
export function describeCause(error: unknown): Record<string, unknown> {
  const root = error instanceof Error && error.cause !== undefined ? error.cause : error;
  if (root instanceof Error) {
    return { type: root.name, message: root.message, code: (root as { code?: unknown }).code };
  }
  return { message: String(root) };
}
