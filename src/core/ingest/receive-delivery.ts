import type { Clock } from '../clock.js';
import type { ClaimResult, NewDelivery, QuarantineResult } from '../delivery.js';
import { InvalidRequestError, PodhookError, UnauthorizedError, UnavailableError } from '../errors.js';
import { inspectBody } from './inspect-body.js';
import type { SecretSource } from '../signing/secret-source.js';
import type { SignatureCrypto } from '../signing/signature-crypto.js';
import { checkSignatureHeader, verifyMac } from '../signing/verify-signature.js';
import { KEPT_HEADERS } from './kept-headers.js';

export const SIGNATURE_HEADER = 'x-svc-signature';
export const EVENT_TYPE_HEADER = 'x-svc-event-type';
export const EVENT_ID_HEADER = 'x-svc-event-id';

/** The shape of an event id (`x-svc-event-id` must be a uuid). */
export const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
const MAX_EVENT_TYPE_LENGTH = 200;

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
  /** Stores a conflicting delivery as `quarantined` (`DeliveryStore.quarantine`); only called on a conflict. */
  quarantine: (delivery: NewDelivery, alternateId: string) => Promise<QuarantineResult>;
  /** Observes each newly quarantined delivery (alerts); never its body. */
  onConflict?: (conflict: DeliveryConflict) => void;
  /**
   * Observes each delivery stored as new, once its commit is durable (a dead one's alert). Called
   * before the answer is sent: it must only start work, never wait on it.
   */
  onStored?: (delivery: NewDelivery) => void;
  /**
   * Adds to a new queued delivery what the store keeps with its claim (ordered handlers: its
   * places in their keys' order). Runs after verification, before the claim.
   */
  admit?: (delivery: NewDelivery) => void;
  toleranceSeconds?: number;
}

/** An authentic delivery that conflicts with a stored one: the same signed content or id under another id or type. */
export interface DeliveryConflict {
  eventId: string;
  eventType: string;
  /** The id the quarantined copy is stored under (the sent id, or one derived from id and type when that is taken). */
  storedAs: string;
  /** The stored delivery it conflicts with. */
  conflictWith: { eventId: string; eventType: string } | null;
}

export interface ReceiveResult {
  eventId: string;
  eventType: string;
  duplicate: boolean;
  status: NewDelivery['status'] | 'quarantined';
  /** Set when this delivery was quarantined just now. */
  conflict?: DeliveryConflict;
}

/**
 * The ingest pipeline, free of any framework: headers, then the signature header and its window,
 * then the body (read only now, capped by the adapter), then the MAC, then the store. Nothing
 * unauthenticated reaches the store. Throws a `PodhookError` for every refusal.
 */
export function createReceiver({ crypto, clock, secrets, claim, quarantine, onConflict, onStored, admit, toleranceSeconds }: ReceiverOptions) {
  const store = async <T>(write: () => Promise<T>): Promise<T> => {
    try {
      return await write();
    } catch (error) {
      if (error instanceof PodhookError) throw error;
      throw new UnavailableError('The delivery could not be stored; retry later.', 'store_unavailable', { cause: error });
    }
  };
  /** `body` may be a reader: it is called only once the headers and the signature's window pass. */
  return async function receiveDelivery(headers: HeaderSource, body: Uint8Array | (() => Promise<Uint8Array>)): Promise<ReceiveResult> {
    const rawId = headers.get(EVENT_ID_HEADER);
    if (rawId == null || rawId === '') throw new InvalidRequestError('Missing x-svc-event-id header.', 'missing_event_id');
    if (!UUID.test(rawId)) throw new InvalidRequestError('x-svc-event-id must be a uuid.', 'malformed_event_id');
    const eventType = headers.get(EVENT_TYPE_HEADER)?.trim();
    if (!eventType) throw new InvalidRequestError('Missing x-svc-event-type header.', 'missing_event_type');
    if (eventType.length > MAX_EVENT_TYPE_LENGTH) {
      throw new InvalidRequestError('x-svc-event-type is too long.', 'malformed_event_type');
    }
    const eventId = rawId.toLowerCase();

    let secretList = await secrets.getSecrets();
    // None kept: one stored since the last read is looked for before a 503 (a source that may lag).
    if (secretList.length === 0 && secrets.recheck) secretList = await secrets.recheck();
    const signature = checkSignatureHeader(headers.get(SIGNATURE_HEADER), secretList, { clock, toleranceSeconds });
    if (typeof body === 'function') body = await body();
    try {
      await verifyMac(signature, body, secretList, crypto);
    } catch (error) {
      // Matched none of the kept secrets: before the 401, the ones stored since the last read.
      if (!(error instanceof UnauthorizedError) || !secrets.recheck) throw error;
      const tried = new Set(secretList);
      const added = (await secrets.recheck()).filter((s) => !tried.has(s));
      if (added.length === 0) throw error;
      await verifyMac(signature, body, added, crypto);
    }

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
    if (admit && delivery.status === 'queued') admit(delivery);

    const result: ClaimResult = await store(() => claim(delivery));
    if (result.outcome === 'new') onStored?.(delivery);
    if (result.outcome !== 'conflict') {
      return { eventId, eventType, duplicate: result.outcome === 'duplicate', status: delivery.status };
    }
    // Refusing would let whoever replayed the signed content first cut the subscription: the
    // conflict is stored where no handler runs it, and surfaced.
    const alternateId = uuidFrom(await crypto.digest(eventId, encoder.encode(eventType)));
    const quarantined = await store(() => quarantine({ ...delivery, lease: undefined }, alternateId));
    if (quarantined.outcome === 'duplicate') return { eventId, eventType, duplicate: true, status: 'quarantined' };
    if (quarantined.outcome === 'conflict') {
      // Another copy changed the row between the claim and the quarantine: the sender retries.
      throw new UnavailableError('The delivery could not be stored; retry later.', 'store_conflict_race', { retryAfterSeconds: 1 });
    }
    const conflict: DeliveryConflict = { eventId, eventType, storedAs: quarantined.eventId, conflictWith: quarantined.conflictWith };
    onConflict?.(conflict);
    return { eventId, eventType, duplicate: false, status: 'quarantined', conflict };
  };
}

const encoder = new TextEncoder();

/** A uuid-shaped id (version 8, name-based) from a digest: stable for one event id and type. */
function uuidFrom(digest: Uint8Array): string {
  const hex = Array.from(digest.subarray(0, 16), (b) => b.toString(16).padStart(2, '0')).join('');
  const variant = ((parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

export type ReceiveDelivery = ReturnType<typeof createReceiver>;

function keptHeaders(headers: HeaderSource): Record<string, string> {
  const kept: Record<string, string> = {};
  headers.forEach((value, name) => {
    const key = name.toLowerCase();
    if (KEPT_HEADERS.has(key)) kept[key] = value;
  });
  return kept;
}
