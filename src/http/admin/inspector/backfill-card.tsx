import type { Context } from 'hono';
import type { Backfill } from '../../../core/backfill/backfill-store.js';
import { backfillProgress } from '../../../core/backfill/progress.js';
import type { AdminEnv } from '../admin-env.js';
import { iso } from './_format.js';
import { StatusBadge } from './badges.js';
import { CsrfField } from './csrf-form.js';

/** One backfill: its progress bar (a native <progress>: no script), rate, estimated end, and Cancel while it runs. */
export function BackfillCard({ c, b, now }: { c: Context<AdminEnv>; b: Backfill; now: number }) {
  const p = backfillProgress(b, now);
  const pct = b.total === 0 ? 100 : Math.min(100, Math.floor((p.done / b.total) * 100));
  const held = b.state === 'running' && b.lease !== null && b.lease.until >= now;
  return (
    <section class="backfill" data-backfill-id={b.id}>
      <h2>
        {b.handler} <StatusBadge status={b.state} />
      </h2>
      <p class="bar">
        <progress value={Math.min(p.done, b.total)} max={Math.max(b.total, 1)} aria-label={`${b.handler}: ${p.done} of ${b.total} deliveries`}>{pct}%</progress>
        <span class="count">{p.done} of {b.total}</span>
      </p>
      <dl class="facts">
        <dt>rate</dt>
        <dd>{p.ratePerSecond === null ? '–' : `${p.ratePerSecond.toFixed(1)} deliveries/s over the last minute`}</dd>
        {b.state === 'running' ? <><dt>estimated end</dt><dd class="eta">{p.estimatedEnd === null ? '–' : iso(p.estimatedEnd)}</dd></> : null}
        <dt>handed over</dt><dd>{b.requeued} (skipped: {b.skipped} already handled)</dd>
        <dt>range</dt>
        <dd>
          {b.eventType ?? 'every type it takes'}, received {b.since === null ? '' : `from ${iso(b.since)} `}
          {b.until === null ? 'until it first runs' : `before ${iso(b.until)}`}
        </dd>
        {b.rate !== null ? <><dt>rate limit</dt><dd>{b.rate}/s</dd></> : null}
        {b.state === 'running' ? <><dt>running on</dt><dd>{held ? b.lease!.owner : 'no receiver holds it now: the next one with the handler takes it'}</dd></> : null}
        <dt>started</dt><dd>{iso(b.createdAt)}</dd>
        {b.finishedAt !== null ? <><dt>finished</dt><dd>{iso(b.finishedAt)}</dd></> : null}
        {b.error ? <><dt>error</dt><dd class="err">{b.error}</dd></> : null}
        <dt>id</dt><dd><code>{b.id}</code></dd>
      </dl>
      {b.state === 'running' ? (
        <form method="post" action={`/_podhook/backfills/${b.id}/cancel`} class="inline">
          <CsrfField c={c} />
          <button type="submit">Cancel</button>
        </form>
      ) : null}
    </section>
  );
}
