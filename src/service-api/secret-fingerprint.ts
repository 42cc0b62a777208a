import { bytesToHex } from '../core/signing/signature-header.js';

/** Hex characters kept: 48 bits, enough to tell a handful of secrets apart, too few to matter. */
const FINGERPRINT_LENGTH = 12;

/**
 * A short, stable name for a signing secret, safe to print and to type (`podhook secrets
 * remove <fingerprint>`): the first 12 hex characters of its SHA-256. The service's secrets are
 * random, so this reveals nothing usable about them.
 */
export async function secretFingerprint(secret: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(secret));
  return bytesToHex(new Uint8Array(digest)).slice(0, FINGERPRINT_LENGTH);
}
