import type { MiddlewareHandler } from 'hono';
import { csrf } from 'hono/csrf';
import { NONCE, secureHeaders } from 'hono/secure-headers';
import type { AdminEnv } from '../admin-env.js';

/** Every inspector answer, the API's too, is `cache-control: no-store`: the pages show live state and a session's CSRF field. */
export const noStore: MiddlewareHandler<AdminEnv> = async (c, next) => {
  await next();
  c.header('cache-control', 'no-store');
};

/**
 * hono's secure headers with a strict CSP: no script at all, and the one inline style sheet
 * allowed by the per-request nonce (`secureHeadersNonce`, which `Layout` puts on its `<style>`).
 */
export function strictPageCsp(): MiddlewareHandler<AdminEnv> {
  return secureHeaders({
    contentSecurityPolicy: {
      defaultSrc: ["'none'"],
      styleSrc: [NONCE],
      imgSrc: ["'self'"],
      formAction: ["'self'"],
      frameAncestors: ["'none'"],
      baseUri: ["'none'"],
    },
    referrerPolicy: 'no-referrer',
  });
}

/**
 * Cross-site form posts are refused by Origin / Sec-Fetch-Site (hono/csrf); the session's CSRF
 * field is checked per route (`checkCsrfForm`).
 */
export function refuseCrossSiteForms(): MiddlewareHandler<AdminEnv> {
  const refuseCrossSite = csrf();
  // A request with an Authorization header is no browser form (a page cannot add that header
  // across sites without a preflight, which nothing here answers): `auth.require` checks it.
  return (c, next) => (c.req.header('authorization') === undefined ? refuseCrossSite(c, next) : next());
}
