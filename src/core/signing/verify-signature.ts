import type { Clock } from '../clock.js';
import { InvalidRequestError, UnauthorizedError, UnavailableError } from '../errors.js';
import { parseSignatureHeader, type ParsedSignatureHeader } from './signature-header.js';
import type { SignatureCrypto } from './signature-crypto.js';

/** The sender's mandatory replay window (spec: Limits, "Signature timestamp window"). */
export const DEFAULT_TOLERANCE_SECONDS = 300;

export interface VerifySignatureOptions {
  crypto: SignatureCrypto;
  clock: Clock;
  toleranceSeconds?: number;
}

/**
 * Parses the header (400 when malformed), then checks the MAC against every secret and every
 * `v1` (401 when none matches), then the window `|now − t| ≤ tolerance` (401). Throws a
 * `PodhookError`; returns the parsed header when the delivery is authentic and fresh.
 */
export async function verifySignature(
  header: string | null,
  body: Uint8Array,
  secrets: readonly string[],
  { crypto, clock, toleranceSeconds = DEFAULT_TOLERANCE_SECONDS }: VerifySignatureOptions,
): Promise<ParsedSignatureHeader> {
  const parsed = parseSignatureHeader(header);
  if (!parsed.ok) {
    throw new InvalidRequestError(
      header == null ? 'Missing x-svc-signature header.' : 'Malformed x-svc-signature header.',
      header == null ? 'missing_signature' : `malformed_signature:${parsed.reason}`,
    );
  }
  const { t, timestamp, signatures } = parsed.value;
  if (secrets.length === 0) {
    throw new UnavailableError('No signing secret is configured.', 'no_secret_configured', { retryAfterSeconds: 60 });
  }

  let matched = false;
  for (const secret of secrets) {
    const expected = await crypto.hmac(secret, t, body);
    for (const candidate of signatures) {
      // Every candidate is compared in constant time; `|=` keeps the loop free of early exits.
      matched = crypto.equal(expected, candidate) || matched;
    }
    if (matched) break;
  }
  if (!matched) throw new UnauthorizedError('signature_mismatch');

  const skew = Math.floor(clock() / 1000) - timestamp;
  if (skew > toleranceSeconds) throw new UnauthorizedError('timestamp_too_old');
  if (skew < -toleranceSeconds) throw new UnauthorizedError('timestamp_in_future');
  return parsed.value;
}
