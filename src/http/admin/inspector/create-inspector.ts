import { Hono } from 'hono';
import { createAdminApi } from '../admin-api.js';
import type { AdminContext } from '../admin-context.js';
import type { AdminEnv } from '../admin-env.js';
import { backfillsPage, cancelBackfill } from './backfills-page.js';
import { withCsrf } from './csrf-form.js';
import { deliveriesPage } from './deliveries-page.js';
import { deliveryBody, deliveryPage, redeliverDelivery } from './delivery-page.js';
import { logIn, loginPage } from './login-page.js';
import { logOut } from './logout.js';
import { noStore, refuseCrossSiteForms, strictPageCsp } from './page-guards.js';
import { redeliverDeadLetters, redeliverPage } from './redeliver-page.js';

/**
 * The delivery inspector's pages under `/_podhook/` (server-rendered, no script, strict CSP), and
 * the admin API under `/api` behind the same authentication. The order is the order things run:
 * the guards, the login page (the one route open without authentication), `auth.require`, the
 * session's CSRF field, then the routes, each page's in a file of its own.
 */
export function createInspector(ctx: AdminContext): Hono<AdminEnv> {
  const app = new Hono<AdminEnv>();
  app.use(noStore);
  app.use(strictPageCsp());
  app.use(refuseCrossSiteForms());

  app.get('/login', loginPage());
  app.post('/login', logIn(ctx));

  app.use(ctx.auth.require);
  app.use(withCsrf(ctx.auth));
  app.route('/api', createAdminApi(ctx));

  app.post('/logout', logOut(ctx));
  app.get('/', deliveriesPage(ctx));
  app.get('/deliveries/:id', deliveryPage(ctx));
  app.get('/deliveries/:id/body', deliveryBody(ctx));
  app.post('/deliveries/:id/redeliver', redeliverDelivery(ctx));
  app.get('/backfills', backfillsPage(ctx));
  app.post('/backfills/:id/cancel', cancelBackfill(ctx));
  app.get('/redeliver', redeliverPage(ctx));
  app.post('/redeliver', redeliverDeadLetters(ctx));
  return app;
}
