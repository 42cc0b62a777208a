import type { Clock } from '../clock.js';
import type { ClaimResult, NewDelivery } from '../delivery.js';
import { ConflictError, InvalidRequestError, PodhookError, UnavailableError } from '../errors.js';
import { inspectBody } from './inspect-body.js';
import type { SecretSource } from '../signing/secret-source.js';
import type { SignatureCrypto } from '../signing/signature-crypto.js';
import { verifySignature } from '../signing/verify-signature.js';

export const SIGNATURE_HEADER = 'x-svc-signature';
export const EVENT_TYPE_HEADER = 'x-svc-event-type';
export const EVENT_ID_HEADER = 'x-svc-event-id';

/** The shape of an event id (`x-svc-event-id` must be a uuid). */
export const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
const MAX_EVENT_TYPE_LENGTH = 200;
/** Headers never kept with a stored delivery: credentials, and the signature itself. */
const DROPPED_HEADERS = new Set([SIGNATURE_HEADER, 'authorization', 'proxy-authorization', 'cookie', 'x-api-key']);

/** Header access as both `Headers` and Node adapters provide it. */
export interface HeaderSource {
  get(name: string): string | null;
  forEach(callback: (value: string, name: string) => void): void;
}

export interface ReceiverOptions {
  crypto: SignatureCrypto;
  clock: Clock;
  secrets: SecretSource;
  /** Durably stores one delivery; resolves after its commit (Node batches these into one transaction). */
  claim: (delivery: NewDelivery) => Promise<ClaimResult>;
  toleranceSeconds?: number;
}

export interface ReceiveResult {
  eventId: string;
  eventType: string;
  duplicate: boolean;
  status: NewDelivery['status'];
}

/**
 * The ingest pipeline, free of any framework: headers, then signature, then window, then the
 * store (the body size is capped by the adapter while reading). Nothing unauthenticated reaches
 * the store. Throws a `PodhookError` for every refusal.
 */
export function createReceiver({ crypto, clock, secrets, claim, toleranceSeconds }: ReceiverOptions) {
  return async function receiveDelivery(headers: HeaderSource, body: Uint8Array): Promise<ReceiveResult> {
    const rawId = headers.get(EVENT_ID_HEADER);
    if (rawId == null || rawId === '') throw new InvalidRequestError('Missing x-svc-event-id header.', 'missing_event_id');
    if (!UUID.test(rawId)) throw new InvalidRequestError('x-svc-event-id must be a uuid.', 'malformed_event_id');
    const eventType = headers.get(EVENT_TYPE_HEADER)?.trim();
    if (!eventType) throw new InvalidRequestError('Missing x-svc-event-type header.', 'missing_event_type');
    if (eventType.length > MAX_EVENT_TYPE_LENGTH) {
      throw new InvalidRequestError('x-svc-event-type is too long.', 'malformed_event_type');
    }
    const eventId = rawId.toLowerCase();

    const signature = await verifySignature(headers.get(SIGNATURE_HEADER), body, await secrets.getSecrets(), {
      crypto,
      clock,
      toleranceSeconds,
    });

    const delivery: NewDelivery = {
      eventId,
      eventType,
      signatureT: signature.timestamp,
      contentDigest: await crypto.digest(signature.t, body),
      body,
      headers: keptHeaders(headers),
      receivedAt: clock(),
      ...inspectBody(eventType, body),
    };

    let result: ClaimResult;
    try {
      result = await claim(delivery);
    } catch (error) {
      if (error instanceof PodhookError) throw error;
      throw new UnavailableError('The delivery could not be stored; retry later.', 'store_unavailable', { cause: error });
    }
    if (result.outcome === 'conflict') {
      throw new ConflictError('This signed content was already received under another event id or type.');
    }
    return { eventId, eventType, duplicate: result.outcome === 'duplicate', status: delivery.status };
  };
}

export type ReceiveDelivery = ReturnType<typeof createReceiver>;

function keptHeaders(headers: HeaderSource): Record<string, string> {
  const kept: Record<string, string> = {};
  headers.forEach((value, name) => {
    const key = name.toLowerCase();
    if (!DROPPED_HEADERS.has(key)) kept[key] = value;
  });
  return kept;
}
