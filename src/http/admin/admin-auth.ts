import type { Context, MiddlewareHandler } from 'hono';
import { getSignedCookie, setSignedCookie, deleteCookie } from 'hono/cookie';
import { timingSafeEqual } from 'hono/utils/buffer';
import type { Clock } from '../../core/clock.js';
import type { Logger } from '../../core/observability/logger.js';
import { errorBody } from '../ingest.js';
import type { AdminEnv } from './admin-env.js';

export const SESSION_COOKIE = 'podhook_admin';
const SESSION_MS = 12 * 3_600_000;

export interface AdminAuthOptions {
  token: string;
  logger: Logger;
  clock: Clock;
  /** The pause before a refused attempt is answered (tests shorten it). */
  failureDelay?: { baseMs: number; maxMs: number };
  sleep?: (ms: number) => Promise<void>;
}

export interface AdminAuth {
  /** Lets through a valid bearer token or session cookie; answers 401 (API) or sends to the login page (inspector). */
  require: MiddlewareHandler<AdminEnv>;
  /** Checks a token typed into the login form; on success sets the session cookie. */
  login(c: Context<AdminEnv>, typed: string): Promise<boolean>;
  logout(c: Context<AdminEnv>): void;
  /** The form field a cookie-authenticated POST must carry (derived from the session, never the token). */
  csrfToken(c: Context<AdminEnv>): Promise<string>;
  /** Whether a cookie-authenticated POST carries this session's CSRF field (bearer requests need none). */
  checkCsrf(c: Context<AdminEnv>, field: unknown): Promise<boolean>;
  /** Logs a refused attempt and waits before it is answered. */
  refused(c: Context<AdminEnv>, reason: string): Promise<void>;
}

const hex = (bytes: ArrayBuffer) => Array.from(new Uint8Array(bytes), (b) => b.toString(16).padStart(2, '0')).join('');

/**
 * The admin surface's authentication: `Authorization: Bearer <ADMIN_TOKEN>`, or a session cookie
 * set by the login form. The cookie holds an expiry signed with HMAC-SHA256 keyed by the token
 * (hono's signed cookie), so it is not the token and changing ADMIN_TOKEN ends every session.
 * Every comparison is constant-time. A refused attempt is logged without what was sent and
 * answered only after a pause that doubles with each refusal in the last minute (up to `maxMs`).
 */
export function createAdminAuth({
  token,
  logger,
  clock,
  failureDelay = { baseMs: 500, maxMs: 8_000 },
  sleep = (ms) => new Promise((r) => setTimeout(r, ms)),
}: AdminAuthOptions): AdminAuth {
  const recent: number[] = [];
  const key = crypto.subtle.importKey('raw', new TextEncoder().encode(token), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  const derive = async (purpose: string) => hex(await crypto.subtle.sign('HMAC', await key, new TextEncoder().encode(purpose)));

  async function refused(c: Context<AdminEnv>, reason: string) {
    const now = clock();
    while (recent.length > 0 && recent[0]! < now - 60_000) recent.shift();
    recent.push(now);
    const delay = Math.min(failureDelay.maxMs, failureDelay.baseMs * 2 ** Math.min(recent.length - 1, 16));
    logger.warn(
      { reason, method: c.req.method, path: c.req.path, request_id: c.get('requestId'), refusals_last_minute: recent.length, delay_ms: delay },
      'admin authentication failed',
    );
    await sleep(delay);
  }

  async function session(c: Context<AdminEnv>): Promise<string | false | undefined> {
    const value = await getSignedCookie(c, token, SESSION_COOKIE);
    if (typeof value !== 'string') return value;
    return /^\d+$/.test(value) && Number(value) > clock() ? value : false;
  }

  const isHttps = (c: Context) => new URL(c.req.url).protocol === 'https:' || c.req.header('x-forwarded-proto') === 'https';

  return {
    require: async function requireAdmin(c, next) {
      const header = c.req.header('authorization');
      const wantsPage = !c.req.path.startsWith('/_podhook/api/') && c.req.method === 'GET';
      if (header !== undefined) {
        const bearer = /^Bearer +(\S+) *$/i.exec(header)?.[1];
        if (bearer !== undefined && (await timingSafeEqual(bearer, token))) {
          c.set('adminAuth', 'bearer');
          return next();
        }
        await refused(c, bearer === undefined ? 'malformed_authorization' : 'wrong_token');
      } else {
        const value = await session(c);
        if (typeof value === 'string') {
          c.set('adminAuth', 'cookie');
          c.set('adminSession', value);
          return next();
        }
        if (value === false) await refused(c, 'invalid_session');
        if (wantsPage) return c.redirect('/_podhook/login', 303);
      }
      return c.json(errorBody('unauthorized', 'Authenticate with the admin token.'), 401);
    },
    async login(c, typed) {
      if (!(await timingSafeEqual(typed, token))) {
        await refused(c, 'wrong_login');
        return false;
      }
      await setSignedCookie(c, SESSION_COOKIE, String(clock() + SESSION_MS), token, {
        path: '/_podhook',
        httpOnly: true,
        sameSite: 'Strict',
        secure: isHttps(c),
        maxAge: SESSION_MS / 1000,
      });
      return true;
    },
    logout(c) {
      deleteCookie(c, SESSION_COOKIE, { path: '/_podhook', secure: isHttps(c) });
    },
    csrfToken: (c) => derive(`csrf:${c.get('adminSession') ?? ''}`),
    async checkCsrf(c, field) {
      if (c.get('adminAuth') === 'bearer') return true;
      return typeof field === 'string' && (await timingSafeEqual(field, await derive(`csrf:${c.get('adminSession') ?? ''}`)));
    },
    refused,
  };
}
