import type { Context } from 'hono';
import type { ScanDeliveriesOptions } from '../../../core/delivery-store.js';
import type { AdminContext } from '../admin-context.js';
import type { AdminEnv } from '../admin-env.js';
import { parseListQuery } from '../admin-queries.js';
import { query } from './_format.js';
import { CsrfField, checkCsrfForm } from './csrf-form.js';
import type { Filters } from './filter-form.js';
import { Layout } from './layout.js';

/** The most dead letters one confirm step redelivers (and counts). */
const MAX_BULK = 10_000;

/** The dead letters a type and since filter select (checked as the list checks them). */
const deadFilters = (f: Filters): Omit<ScanDeliveriesOptions, 'after' | 'limit'> => {
  const parsed = parseListQuery({ type: f.type ?? '', since: f.since ?? '' });
  return { status: 'dead', eventType: parsed.eventType, since: parsed.since };
};

/** `GET /_podhook/redeliver`: the confirm step before dead letters are redelivered in bulk: how many match, and the button. */
export function redeliverPage(ctx: Pick<AdminContext, 'countMatching'>) {
  return async function redeliverPage(c: Context<AdminEnv>) {
    const f: Filters = { type: c.req.query('type') || undefined, since: c.req.query('since') || undefined };
    const count = await ctx.countMatching(deadFilters(f), MAX_BULK);
    return c.html(
      <Layout c={c} title="Redeliver dead letters">
        <h1>Redeliver dead letters</h1>
        <p>
          <strong class="count">{count}{count >= MAX_BULK ? '+' : ''}</strong> dead {count === 1 ? 'letter matches' : 'letters match'}
          {f.type ? <> of type <code>{f.type}</code></> : null}{f.since ? <> received since <code>{f.since}</code></> : null}.
          Their handlers run again in the dispatcher, one more attempt each, resuming after the durable steps they recorded
          (from the start, when checked below).
        </p>
        {count === 0 ? <p><a href="/_podhook/">← Back</a></p> : (
          <form method="post" action="/_podhook/redeliver" class="inline">
            <CsrfField c={c} />
            <input type="hidden" name="type" value={f.type ?? ''} />
            <input type="hidden" name="since" value={f.since ?? ''} />
            <input type="hidden" name="expected" value={String(count)} />
            <button type="submit" class="primary">Redeliver {count}</button>
            <label class="fresh" title="Drop the steps their handlers recorded, so they run from the first step (after a deploy changed them)">
              <input type="checkbox" name="fresh" value="1" /> from the start (drop recorded steps)
            </label>{' '}
            <a href={`/_podhook/${query({ status: 'dead', ...f })}`}>Cancel</a>
          </form>
        )}
      </Layout>,
    );
  };
}

/** `POST /_podhook/redeliver` (the confirm step's button): hands the matching dead letters back to the dispatcher, then to the list with how many. */
export function redeliverDeadLetters(ctx: Pick<AdminContext, 'auth' | 'replayMatching'>) {
  return async function redeliverDeadLetters(c: Context<AdminEnv>) {
    const checked = await checkCsrfForm(ctx.auth, c);
    if (!checked.ok) return checked.answer;
    const form = checked.form;
    const f: Filters = { type: (form.type as string) || undefined, since: (form.since as string) || undefined };
    const n = await ctx.replayMatching(deadFilters(f), { fresh: form.fresh === '1' });
    return c.redirect(`/_podhook/${query({ status: 'dead', ...f, redelivered: String(n) })}`, 303);
  };
}
