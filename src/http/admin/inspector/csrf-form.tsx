import type { Context, MiddlewareHandler } from 'hono';
import { errorBody } from '../../ingest.js';
import type { AdminAuth } from '../admin-auth.js';
import type { AdminEnv } from '../admin-env.js';

/** Puts this session's CSRF field (`csrfField`) on the request, for the pages' forms; runs after `auth.require`. */
export function withCsrf(auth: AdminAuth): MiddlewareHandler<AdminEnv> {
  return async function withCsrf(c, next) {
    c.set('csrfField', await auth.csrfToken(c));
    await next();
  };
}

/** The per-session field every form POST carries; the value is filled in by `withCsrf`. */
export function CsrfField({ c }: { c: Context<AdminEnv> }) {
  return <input type="hidden" name="csrf" value={c.get('csrfField') ?? ''} />;
}

/** Refuses a cookie-authenticated POST without this session's CSRF field; else the parsed form. */
export async function checkCsrfForm(auth: AdminAuth, c: Context<AdminEnv>) {
  const form = await c.req.parseBody();
  if (!(await auth.checkCsrf(c, form.csrf))) return { ok: false as const, answer: c.json(errorBody('forbidden', 'The form is stale: reload the page.'), 403) };
  return { ok: true as const, form };
}
