import type { Context } from 'hono';
import type { AdminContext } from '../admin-context.js';
import type { AdminEnv } from '../admin-env.js';
import { Layout } from './layout.js';

/** The login form; 401 with the reason after a wrong token. */
const loginForm = (c: Context<AdminEnv>, failed: boolean) =>
  c.html(
    <Layout c={c} title="Log in">
      <h1>podhook inspector</h1>
      <form method="post" action="/_podhook/login" class="login">
        <label>Admin token <input type="password" name="token" autocomplete="current-password" required /></label>
        <button type="submit">Log in</button>
        {failed ? <p class="err" role="alert">That is not the admin token.</p> : null}
      </form>
    </Layout>,
    failed ? 401 : 200,
  );

/** `GET /_podhook/login`: the one page served before authentication. */
export function loginPage() {
  return function loginPage(c: Context<AdminEnv>) {
    return loginForm(c, false);
  };
}

/** `POST /_podhook/login`: the right token sets the session cookie and goes to the deliveries; a wrong one shows the form again. */
export function logIn({ auth }: Pick<AdminContext, 'auth'>) {
  return async function logIn(c: Context<AdminEnv>) {
    const form = await c.req.parseBody();
    if (typeof form.token === 'string' && (await auth.login(c, form.token))) return c.redirect('/_podhook/', 303);
    if (typeof form.token !== 'string') await auth.refused(c, 'wrong_login');
    return loginForm(c, true);
  };
}
