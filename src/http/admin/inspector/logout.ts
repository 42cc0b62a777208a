import type { Context } from 'hono';
import type { AdminContext } from '../admin-context.js';
import type { AdminEnv } from '../admin-env.js';
import { checkCsrfForm } from './csrf-form.js';

/** `POST /_podhook/logout` (the header's Log out): ends the cookie session, then to the login page. */
export function logOut({ auth }: Pick<AdminContext, 'auth'>) {
  return async function logOut(c: Context<AdminEnv>) {
    const checked = await checkCsrfForm(auth, c);
    if (!checked.ok) return checked.answer;
    auth.logout(c);
    return c.redirect('/_podhook/login', 303);
  };
}
