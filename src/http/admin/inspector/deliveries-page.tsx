import type { Context } from 'hono';
import { PodhookError } from '../../../core/errors.js';
import { readParked } from '../../../core/transfer/delivery-rows.js';
import type { AdminContext } from '../admin-context.js';
import type { AdminEnv } from '../admin-env.js';
import { MAX_DURATION_SAMPLES, pageOf, parseListQuery, statsAnswer } from '../admin-queries.js';
import { query } from './_format.js';
import { Banner } from './banner.js';
import { DeliveryList } from './delivery-list.js';
import { FilterForm, type Filters } from './filter-form.js';
import { HandlerTable } from './handler-table.js';
import { Layout } from './layout.js';
import { OutcomeChart } from './outcome-chart.js';

/**
 * `GET /_podhook/`: the banner, the last 24 hours (chart and handler table), and the deliveries
 * newest first, filtered and paged by a keyset cursor. An `event_id` goes straight to that delivery.
 */
export function deliveriesPage(ctx: Pick<AdminContext, 'store' | 'router' | 'clock' | 'lastDowntime'>) {
  const { store, router, clock } = ctx;
  const stats = async () => {
    const now = clock();
    const raw = await store.deliveryStats({ since: now - 24 * 3_600_000, maxSamples: MAX_DURATION_SAMPLES });
    return statsAnswer(raw, router, { now, hours: 24, downtime: await ctx.lastDowntime() });
  };

  return async function deliveriesPage(c: Context<AdminEnv>) {
    const q = c.req.query();
    const eventId = q.event_id?.trim().toLowerCase();
    if (eventId) return c.redirect(`/_podhook/deliveries/${encodeURIComponent(eventId)}`, 303);
    const f: Filters = { status: q.status || undefined, type: q.type || undefined, since: q.since || undefined, drift: q.drift || undefined };
    let options: ReturnType<typeof parseListQuery>;
    let problem: string | null = null;
    try {
      options = parseListQuery({ ...f, cursor: q.cursor ?? '', limit: '50' } as Record<string, string>);
    } catch (error) {
      // A filter typed wrong shows the page with the reason, not a JSON error.
      if (!(error instanceof PodhookError)) throw error;
      problem = error.message;
      options = parseListQuery({ limit: '50' });
    }
    const [{ rows, next }, s] = await Promise.all([pageOf(store, options), stats()]);
    const parked = await readParked(store, rows);
    const notice = q.redelivered !== undefined ? `${Number(q.redelivered)} handed back to the dispatcher.` : null;
    return c.html(
      <Layout c={c} title="Deliveries">
        <Banner stats={s} />
        {notice ? <p class="notice" role="status">{notice}</p> : null}
        <section>
          <h2>Last 24 hours</h2>
          <OutcomeChart stats={s} />
          <HandlerTable stats={s} />
        </section>
        <section>
          <h1>Deliveries</h1>
          <FilterForm f={f} />
          {problem ? <p class="err" role="alert">Filter not applied: {problem}.</p> : null}
          {f.status === 'dead' ? <p><a class="button" href={`/_podhook/redeliver${query(f)}`}>Redeliver these dead letters…</a></p> : null}
          <DeliveryList rows={rows} parked={parked} />
          {next ? <p><a class="button" rel="next" href={`/_podhook/${query({ ...f, cursor: next })}`}>Older →</a></p> : null}
        </section>
      </Layout>,
    );
  };
}
