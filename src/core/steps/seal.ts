import { base64ToBytes as unb64, bytesToBase64 as b64 } from '../transfer/base64.js';
import { StepError } from './step-errors.js';

/** Where the key of sensitive step results comes from: named in every message about it. */
export const STEP_KEY_VARIABLE = 'STEP_ENCRYPTION_KEY';
const PREFIX = 'sealed:v1:';


/**
 * STEP_ENCRYPTION_KEY's text as 32 raw bytes: 64 hex digits, or base64 of 32 bytes (`openssl rand
 * -hex 32`, `openssl rand -base64 32`). Null when it is neither (the config check names the variable).
 */
export function parseStepKey(text: string): Uint8Array<ArrayBuffer> | null {
  const t = text.trim();
  if (/^[0-9a-fA-F]{64}$/.test(t)) return Uint8Array.from(t.match(/../g)!.map((h) => parseInt(h, 16)));
  try {
    const bytes = own(unb64(t));
    return bytes.byteLength === 32 ? bytes : null;
  } catch {
    return null;
  }
}

/** A copy on an ArrayBuffer of its own, as Web Crypto's typings want. */
const own = (bytes: Uint8Array) => new Uint8Array(bytes);

/** What a sealed result is bound to: a sealed result copied to another step does not open. */
const boundTo = (eventId: string, handler: string, seq: number) => new TextEncoder().encode(`${eventId}\u0000${handler}\u0000${seq}`);

/** Seals and opens sensitive step results with AES-256-GCM (Web Crypto: Node, its threads and workerd alike). */
export interface StepSeal {
  /** Throws the error a seal would, before a sensitive step's function runs: no side effect for a result that could not be kept. */
  check?(): void;
  seal(plaintext: string, at: { eventId: string; handler: string; seq: number }): Promise<string>;
  open(sealed: string, at: { eventId: string; handler: string; seq: number }): Promise<string>;
}

/**
 * The seal for STEP_ENCRYPTION_KEY, or, without a key, one whose every use fails with one line
 * naming the variable (a sensitive step without the key configured fails; the others never ask).
 */
export function createStepSeal(keyText: string | null | undefined): StepSeal {
  const raw = keyText ? parseStepKey(keyText) : null;
  const missing = () =>
    new StepError('step_key_missing', `a sensitive step needs ${STEP_KEY_VARIABLE} (32 bytes: 64 hex digits or base64) to seal its result`, true);
  if (!raw) {
    return {
      check() {
        throw missing();
      },
      seal: () => Promise.reject(missing()),
      open: () => Promise.reject(missing()),
    };
  }
  let key: Promise<CryptoKey> | undefined;
  const keyOf = () => (key ??= crypto.subtle.importKey('raw', raw, 'AES-GCM', false, ['encrypt', 'decrypt']));
  return {
    async seal(plaintext, at) {
      const iv = crypto.getRandomValues(new Uint8Array(12));
      const sealed = await crypto.subtle.encrypt({ name: 'AES-GCM', iv, additionalData: boundTo(at.eventId, at.handler, at.seq) }, await keyOf(), new TextEncoder().encode(plaintext));
      return `${PREFIX}${b64(iv)}:${b64(new Uint8Array(sealed))}`;
    },
    async open(sealed, at) {
      const [iv, data] = sealed.slice(PREFIX.length).split(':');
      try {
        const plain = await crypto.subtle.decrypt({ name: 'AES-GCM', iv: own(unb64(iv!)), additionalData: boundTo(at.eventId, at.handler, at.seq) }, await keyOf(), own(unb64(data!)));
        return new TextDecoder().decode(plain);
      } catch (cause) {
        throw new StepError('step_key_missing', `a sensitive step's recorded result does not open with this ${STEP_KEY_VARIABLE} (was the key changed?)`, true, { cause });
      }
    },
  };
}
