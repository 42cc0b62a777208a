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
 * Parses the header (400 when malformed), then checks the window `|now − t| ≤ tolerance` (401),
 * then the MAC against every secret and every `v1` (401 when none matches). Throws a
 * `PodhookError`; returns the parsed header when the delivery is authentic and fresh.
 */
export async function verifySignature(
  header: string | null,
  body: Uint8Array,
  secrets: readonly string[],
  options: VerifySignatureOptions,
): Promise<ParsedSignatureHeader> {
  const parsed = checkSignatureHeader(header, secrets, options);
  await verifyMac(parsed, body, secrets, options.crypto);
  return parsed;
}

/**
 * What can be checked before the body is read: the header's shape (400), a configured secret
 * (503) and the window (401), so a missing, malformed or stale signature costs no body read.
 */
export function checkSignatureHeader(
  header: string | null,
  secrets: readonly string[],
  { clock, toleranceSeconds = DEFAULT_TOLERANCE_SECONDS }: Omit<VerifySignatureOptions, 'crypto'>,
): ParsedSignatureHeader {
  const parsed = parseSignatureHeader(header);
  if (!parsed.ok) {
    throw new InvalidRequestError(
      header == null ? 'Missing x-svc-signature header.' : 'Malformed x-svc-signature header.',
      header == null ? 'missing_signature' : `malformed_signature:${parsed.reason}`,
    );
  }
  if (secrets.length === 0) {
    throw new UnavailableError('No signing secret is configured.', 'no_secret_configured', { retryAfterSeconds: 60 });
  }
  const skew = Math.floor(clock() / 1000) - parsed.value.timestamp;
  if (skew > toleranceSeconds) throw new UnauthorizedError('timestamp_too_old');
  if (skew < -toleranceSeconds) throw new UnauthorizedError('timestamp_in_future');
  return parsed.value;
}

/** The MAC of `<t>.<body>` under any secret equals any `v1` (401 otherwise); constant-time comparisons. */
export async function verifyMac(
  { t, signatures }: ParsedSignatureHeader,
  body: Uint8Array,
  secrets: readonly string[],
  crypto: SignatureCrypto,
): Promise<void> {
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
}
