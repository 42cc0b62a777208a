import type { Context } from 'hono';
import type { AdminContext } from '../admin-context.js';
import type { AdminEnv } from '../admin-env.js';
import { BackfillCard } from './backfill-card.js';
import { checkCsrfForm } from './csrf-form.js';
import { Layout } from './layout.js';

/** `GET /_podhook/backfills`: the last 50 backfills, newest first, each a card with its progress. */
export function backfillsPage({ store, clock }: Pick<AdminContext, 'store' | 'clock'>) {
  return async function backfillsPage(c: Context<AdminEnv>) {
    const now = clock();
    const backfills = await store.listBackfills({ limit: 50 });
    const note = c.req.query('cancelled');
    return c.html(
      <Layout c={c} title="Backfills">
        <h1>Backfills</h1>
        {note !== undefined ? <p class="notice" role="status">{note === '1' ? 'Cancelled: deliveries already handed to the dispatcher still run.' : 'Not cancelled: it is no longer running.'}</p> : null}
        <p class="muted">
          A backfill runs a handler added late on the stored deliveries of its types, paced so live deliveries go first. Start one with{' '}
          <code>podhook backfill NAME</code> or <code>POST /_podhook/api/backfills</code>. Reload for progress.
        </p>
        {backfills.length === 0 ? <p class="empty">No backfill has been started.</p> : backfills.map((b) => <BackfillCard c={c} b={b} now={now} />)}
      </Layout>,
    );
  };
}

/** `POST /_podhook/backfills/:id/cancel` (a card's Cancel): cancels it if it still runs, then back to the list with the outcome. */
export function cancelBackfill({ auth, store, clock }: Pick<AdminContext, 'auth' | 'store' | 'clock'>) {
  return async function cancelBackfill(c: Context<AdminEnv, '/backfills/:id/cancel'>) {
    const checked = await checkCsrfForm(auth, c);
    if (!checked.ok) return checked.answer;
    const cancelled = await store.cancelBackfill(c.req.param('id'), clock());
    return c.redirect(`/_podhook/backfills?cancelled=${cancelled ? 1 : 0}`, 303);
  };
}
