import type { Context } from 'hono';
import { readOrderWaits } from '../../../core/order/waiting-on.js';
import { errorBody } from '../../ingest.js';
import type { AdminContext } from '../admin-context.js';
import type { AdminEnv } from '../admin-env.js';
import { readRuns } from '../admin-queries.js';
import { ladderReading } from '../ladder-reading.js';
import { iso } from './_format.js';
import { DriftBadge, ParkedBadge, StatusBadge } from './badges.js';
import { checkCsrfForm, CsrfField } from './csrf-form.js';
import { Layout } from './layout.js';
import { RunsTable } from './runs-table.js';

/** The body as people read it: indented JSON when it parses, the text otherwise. */
function prettyBody(body: Uint8Array): string {
  const text = new TextDecoder('utf-8', { fatal: false, ignoreBOM: false }).decode(body);
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

/**
 * `GET /_podhook/deliveries/:id`: one delivery's facts (what its delivery count says against the
 * sender's ladder, what its ordered handlers wait on), its payload drift, Redeliver, its handler
 * runs, headers and body; 404 when no delivery has the id.
 */
export function deliveryPage({ store, router }: Pick<AdminContext, 'store' | 'router'>) {
  return async function deliveryPage(c: Context<AdminEnv, '/deliveries/:id'>) {
    const d = await store.get(c.req.param('id'));
    if (!d) {
      return c.html(<Layout c={c} title="Not found"><p class="empty">No delivery has the event id <code>{c.req.param('id')}</code>.</p></Layout>, 404);
    }
    const runs = await readRuns(store, d, router);
    const parked = runs.flatMap((r) => (r.parked ? [{ handler: r.handler, ...r.parked }] : []));
    const hasSteps = runs.some((r) => r.steps?.length);
    const waits = (await readOrderWaits(store, [d])).get(d.eventId) ?? [];
    const note = c.req.query('redelivered');
    return c.html(
      <Layout c={c} title={d.eventType}>
        <p><a href="/_podhook/">← Deliveries</a></p>
        {note !== undefined ? <p class="notice" role="status">{note === '1' ? 'Handed back to the dispatcher.' : 'Not redelivered: a dispatcher holds it, or no handler takes its type.'}</p> : null}
        <h1><StatusBadge status={d.status} /> {d.eventType} <DriftBadge drift={d.drift} /></h1>
        <dl class="facts">
          <dt>event id</dt><dd><code>{d.eventId}</code></dd>
          <dt>received</dt><dd>{iso(d.receivedAt)}{d.lastReceivedAt !== d.receivedAt ? ` (last ${iso(d.lastReceivedAt)})` : ''}</dd>
          <dt>delivery_count</dt><dd>{d.deliveryCount} <span class="muted ladder">{ladderReading(d.deliveryCount)}</span></dd>
          <dt>attempts</dt><dd>{d.attempts}</dd>
          {d.processedAt ? <><dt>processed</dt><dd>{iso(d.processedAt)}</dd></> : null}
          {d.nextAttemptAt && (d.status === 'failed' || d.status === 'queued') ? <><dt>next attempt</dt><dd>{iso(d.nextAttemptAt)}</dd></> : null}
          {d.lastError ? <><dt>last error</dt><dd class="err">{d.lastError}</dd></> : null}
          {parked.map((p) => (
            <>
              <dt>parked</dt>
              <dd>
                {p.handler} {p.waiting_for ? <>waiting at <code>{p.step}</code> for {p.waiting_for.types.join(' or ')} of pod <code>{p.waiting_for.pod_id}</code> until</> : <>at sleep <code>{p.step}</code></>}{' '}
                <ParkedBadge wakeAt={p.wake_at} step={p.step} waitingFor={p.waiting_for?.types} />
              </dd>
            </>
          ))}
          {waits.map((w) => (
            <>
              <dt>waits</dt>
              <dd class="waits">
                {w.handler} (key <code>{w.key}</code>):{' '}
                {w.waitingOn ? <>for <a href={`/_podhook/deliveries/${w.waitingOn}`}><code>{w.waitingOn}</code></a>, which comes first</> : 'its turn (the hold, or its retry)'}
              </dd>
            </>
          ))}
        </dl>
        {d.drift ? (
          <section class="drift">
            <h2>Payload drift</h2>
            <p class="muted">
              When it arrived, its payload did not fit the {d.eventType} shape <code>podhook schemas</code> learned. It was stored and dispatched as usual.
              Learn the change: <code>podhook schemas</code>, review and commit, deploy; if its schema refused it, <code>podhook replay --status dead --type {d.eventType}</code>.
            </p>
            <div class="scroll">
              <table class="drift">
                <thead><tr><th>path</th><th>kind</th><th>what changed</th></tr></thead>
                <tbody>{d.drift.map((x) => <tr><td><code>{x.path}</code></td><td>{x.kind}</td><td>{x.message}</td></tr>)}</tbody>
              </table>
            </div>
          </section>
        ) : null}
        <form method="post" action={`/_podhook/deliveries/${d.eventId}/redeliver`} class="inline">
          <CsrfField c={c} />
          <button type="submit" class="primary">Redeliver</button>
          {hasSteps ? (
            <label class="fresh" title="Drop the steps its handlers recorded, so they run from the first step (after a deploy changed them)">
              <input type="checkbox" name="fresh" value="1" /> from the start (drop recorded steps)
            </label>
          ) : null}
        </form>
        <h2>Handler runs</h2>
        <RunsTable runs={runs} />
        <h2>Headers</h2>
        <div class="scroll">
          <table>
            <tbody>{Object.entries(d.headers).map(([k, v]) => <tr><th>{k}</th><td><code>{v}</code></td></tr>)}</tbody>
          </table>
        </div>
        <h2>Body <a class="small" href={`/_podhook/deliveries/${d.eventId}/body`}>download raw ({d.body.byteLength} bytes)</a></h2>
        <pre class="body">{prettyBody(d.body)}</pre>
      </Layout>,
    );
  };
}

/** `GET /_podhook/deliveries/:id/body`: the raw body bytes as a download, exactly as they were sent. */
export function deliveryBody({ store }: Pick<AdminContext, 'store'>) {
  return async function deliveryBody(c: Context<AdminEnv, '/deliveries/:id/body'>) {
    const d = await store.get(c.req.param('id'));
    if (!d) return c.json(errorBody('not_found', 'No delivery has this event id.'), 404);
    return c.body(d.body.slice().buffer as ArrayBuffer, 200, {
      'content-type': 'application/octet-stream',
      'content-disposition': `attachment; filename="${d.eventId}.json"`,
      'x-content-type-options': 'nosniff',
    });
  };
}

/**
 * `POST /_podhook/deliveries/:id/redeliver` (the page's Redeliver): hands it back to the dispatcher,
 * from the start (its recorded steps dropped) when `fresh` is checked, then back to its page with the outcome.
 */
export function redeliverDelivery(ctx: Pick<AdminContext, 'auth' | 'replay'>) {
  return async function redeliverDelivery(c: Context<AdminEnv, '/deliveries/:id/redeliver'>) {
    const checked = await checkCsrfForm(ctx.auth, c);
    if (!checked.ok) return checked.answer;
    const id = c.req.param('id').toLowerCase();
    const n = await ctx.replay([id], { fresh: checked.form.fresh === '1' });
    return c.redirect(`/_podhook/deliveries/${encodeURIComponent(id)}?redelivered=${n > 0 ? 1 : 0}`, 303);
  };
}
