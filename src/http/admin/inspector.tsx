import { Hono, type Context } from 'hono';
import { csrf } from 'hono/csrf';
import type { Child } from 'hono/jsx';
import { NONCE, secureHeaders } from 'hono/secure-headers';
import { DELIVERY_STATUSES, type Delivery } from '../../core/delivery.js';
import type { ScanDeliveriesOptions } from '../../core/delivery-store.js';
import { PodhookError } from '../../core/errors.js';
import { PODS_DRIFT_COMMAND } from '../../core/alerts/alert-message.js';
import { deliveryJson } from '../../core/transfer/delivery-export.js';
import { errorBody } from '../ingest.js';
import { createAdminApi } from './admin-api.js';
import type { AdminContext } from './admin-context.js';
import type { AdminEnv } from './admin-env.js';
import { readOrderWaits } from '../../core/order/waiting-on.js';
import type { Backfill } from '../../core/backfill/backfill-store.js';
import { backfillProgress } from '../../core/backfill/progress.js';
import { MAX_DURATION_SAMPLES, readRuns, pageOf, parseListQuery, statsAnswer, type StatsAnswer } from './admin-queries.js';
import { OutcomeChart } from './outcome-chart.js';
import { INSPECTOR_CSS } from './inspector-style.js';
import { GIVE_UP_AFTER_MS, SENDER_RETRY_MINUTES } from '../../core/sender-retry-ladder.js';
import { isoTime } from '../../core/time-or-duration.js';
import { ladderReading } from './ladder-reading.js';

/** The most dead letters one confirm step redelivers (and counts). */
const MAX_BULK = 10_000;

type Filters = { status?: string; type?: string; since?: string; drift?: string };
const iso = (ms: number | null | undefined) => isoTime(ms)?.replace('.000Z', 'Z') ?? '';
const query = (params: Record<string, string | undefined>) => {
  const q = new URLSearchParams(Object.entries(params).filter((e): e is [string, string] => !!e[1])).toString();
  return q ? `?${q}` : '';
};

function Layout({ c, title, children }: { c: Context<AdminEnv>; title: string; children: Child }) {
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="referrer" content="no-referrer" />
        <title>{title} · podhook</title>
        <style nonce={c.get('secureHeadersNonce')}>{INSPECTOR_CSS}</style>
      </head>
      <body>
        <header>
          <nav>
            <a class="brand" href="/_podhook/">podhook</a>
            {c.get('adminAuth') ? <><a href="/_podhook/">Deliveries</a> <a href="/_podhook/backfills">Backfills</a></> : null}
          </nav>
          {c.get('adminAuth') === 'cookie' ? (
            <form method="post" action="/_podhook/logout" class="inline">
              <CsrfField c={c} />
              <button type="submit" class="link">Log out</button>
            </form>
          ) : null}
        </header>
        <main>{children}</main>
      </body>
    </html>
  );
}

/** The per-session field every form POST carries; the value is filled in by `withCsrf`. */
function CsrfField({ c }: { c: Context<AdminEnv> }) {
  return <input type="hidden" name="csrf" value={c.get('csrfField') ?? ''} />;
}

function StatusBadge({ status }: { status: string }) {
  return <span class={`badge s-${status}`}>{status}</span>;
}

/** Shown on a delivery whose payload did not fit its type's learned shape when it arrived. */
function DriftBadge({ drift }: { drift: Delivery['drift'] }) {
  if (!drift) return null;
  const title = `payload drift: ${drift.map((d) => `${d.path} ${d.kind}`).join(', ')}`;
  return <span class="badge drift" title={title}>drift</span>;
}

function Banner({ stats }: { stats: StatsAnswer }) {
  const d = stats.last_downtime;
  return (
    <>
      {stats.dead_letters > 0 ? (
        <p class="banner dead" role="alert">
          <strong>{stats.dead_letters} dead {stats.dead_letters === 1 ? 'letter' : 'letters'}</strong>: their handlers gave up.{' '}
          <a href={`/_podhook/${query({ status: 'dead' })}`}>Review</a> · <a href={`/_podhook/redeliver${query({ status: 'dead' })}`}>Redeliver all…</a>
        </p>
      ) : null}
      {d ? (
        <p class="banner down" role="alert">
          <strong>podhook was down for {d.minutes < 120 ? `${d.minutes} min` : `${+(d.minutes / 60).toFixed(1)} h`}</strong> ({d.from} to {d.until}). The sender retries after {SENDER_RETRY_MINUTES.join(', ')} min;
          {d.minutes * 60_000 > GIVE_UP_AFTER_MS
            ? ` past about 22.4 h it has probably disabled the webhook: re-enable it, and run ${PODS_DRIFT_COMMAND} (or GET /_podhook/api/pods?drift=true) to see the pods podhook may have missed.`
            : ' deliveries sent meanwhile should arrive on its retries.'}
        </p>
      ) : null}
    </>
  );
}

function HandlerTable({ stats }: { stats: StatsAnswer }) {
  if (stats.handlers.length === 0) return null;
  return (
    <div class="scroll">
      <table>
        <thead>
          <tr><th>handler</th><th class="num">runs</th><th class="num">failures</th><th class="num">p50</th><th class="num">p99</th></tr>
        </thead>
        <tbody>
          {stats.handlers.map((h) => (
            <tr>
              <td>{h.handler}</td>
              <td class="num">{h.runs}</td>
              <td class="num">{h.failures}</td>
              <td class="num">{h.p50_ms === null ? '–' : `${h.p50_ms} ms`}</td>
              <td class="num">{h.p99_ms === null ? '–' : `${h.p99_ms} ms`}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function FilterForm({ f, eventId }: { f: Filters; eventId?: string }) {
  return (
    <form method="get" action="/_podhook/" class="filters">
      <label>status
        <select name="status">
          <option value="">any</option>
          {DELIVERY_STATUSES.map((s) => <option value={s} selected={f.status === s}>{s}</option>)}
        </select>
      </label>
      <label>type <input name="type" value={f.type ?? ''} placeholder="pod.created" /></label>
      <label>since <input name="since" value={f.since ?? ''} placeholder="2026-05-01T12:00Z" /></label>
      <label>drift
        <select name="drift">
          <option value="">any</option>
          <option value="true" selected={f.drift === 'true'}>drifted</option>
          <option value="false" selected={f.drift === 'false'}>fitting</option>
        </select>
      </label>
      <label>event id <input name="event_id" value={eventId ?? ''} placeholder="uuid" /></label>
      <button type="submit">Filter</button>
    </form>
  );
}

function DeliveryList({ rows }: { rows: Delivery[] }) {
  if (rows.length === 0) return <p class="empty">No deliveries match.</p>;
  return (
    <ul class="deliveries">
      {rows.map((d) => {
        const j = deliveryJson(d);
        return (
          <li>
            <a href={`/_podhook/deliveries/${d.eventId}`} data-event-id={d.eventId}>
              <StatusBadge status={d.status} />
              <span class="type">{d.eventType} <DriftBadge drift={d.drift} /></span>
              <time>{iso(d.receivedAt)}</time>
              <code class="id">{d.eventId}</code>
              {j.last_error ? <span class="err">{j.last_error}</span> : null}
            </a>
          </li>
        );
      })}
    </ul>
  );
}

/** One backfill: its progress bar (a native <progress>: no script), rate, estimated end, and Cancel while it runs. */
function BackfillCard({ c, b, now }: { c: Context<AdminEnv>; b: Backfill; now: number }) {
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

/** The body as people read it: indented JSON when it parses, the text otherwise. */
function prettyBody(body: Uint8Array): string {
  const text = new TextDecoder('utf-8', { fatal: false, ignoreBOM: false }).decode(body);
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

/** The delivery inspector's pages under `/_podhook/` (server-rendered, no script, strict CSP). */
export function createInspector(ctx: AdminContext): Hono<AdminEnv> {
  const { store, router, auth, clock } = ctx;
  const app = new Hono<AdminEnv>();
  app.use(async (c, next) => {
    await next();
    c.header('cache-control', 'no-store');
  });
  app.use(
    secureHeaders({
      contentSecurityPolicy: {
        defaultSrc: ["'none'"],
        styleSrc: [NONCE],
        imgSrc: ["'self'"],
        formAction: ["'self'"],
        frameAncestors: ["'none'"],
        baseUri: ["'none'"],
      },
      referrerPolicy: 'no-referrer',
    }),
  );
  // Cross-site form posts are refused by Origin / Sec-Fetch-Site; the session's CSRF field is checked per route.
  // A request with an Authorization header is no browser form (a page cannot add that header
  // across sites without a preflight, which nothing here answers): `auth.require` checks it.
  const refuseCrossSite = csrf();
  app.use((c, next) => (c.req.header('authorization') === undefined ? refuseCrossSite(c, next) : next()));

  const loginPage = (c: Context<AdminEnv>, failed: boolean) =>
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
  app.get('/login', (c) => loginPage(c, false));
  app.post('/login', async (c) => {
    const form = await c.req.parseBody();
    if (typeof form.token === 'string' && (await auth.login(c, form.token))) return c.redirect('/_podhook/', 303);
    if (typeof form.token !== 'string') await auth.refused(c, 'wrong_login');
    return loginPage(c, true);
  });

  app.use(auth.require);
  app.use(async (c, next) => {
    c.set('csrfField', await auth.csrfToken(c));
    await next();
  });
  app.route('/api', createAdminApi(ctx));

  /** Refuses a cookie-authenticated POST without this session's CSRF field. */
  const checkForm = async (c: Context<AdminEnv>) => {
    const form = await c.req.parseBody();
    if (!(await auth.checkCsrf(c, form.csrf))) return { ok: false as const, answer: c.json(errorBody('forbidden', 'The form is stale: reload the page.'), 403) };
    return { ok: true as const, form };
  };

  app.post('/logout', async (c) => {
    const checked = await checkForm(c);
    if (!checked.ok) return checked.answer;
    auth.logout(c);
    return c.redirect('/_podhook/login', 303);
  });

  const stats = async () => {
    const now = clock();
    const raw = await store.deliveryStats({ since: now - 24 * 3_600_000, maxSamples: MAX_DURATION_SAMPLES });
    return statsAnswer(raw, router, { now, hours: 24, downtime: await ctx.lastDowntime() });
  };

  app.get('/', async (c) => {
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
          <DeliveryList rows={rows} />
          {next ? <p><a class="button" rel="next" href={`/_podhook/${query({ ...f, cursor: next })}`}>Older →</a></p> : null}
        </section>
      </Layout>,
    );
  });

  app.get('/deliveries/:id', async (c) => {
    const d = await store.get(c.req.param('id'));
    if (!d) {
      return c.html(<Layout c={c} title="Not found"><p class="empty">No delivery has the event id <code>{c.req.param('id')}</code>.</p></Layout>, 404);
    }
    const runs = await readRuns(store, d, router);
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
        </form>
        <h2>Handler runs</h2>
        {runs.length === 0 ? <p class="empty">No handler has run it.</p> : (
          <div class="scroll">
            <table class="runs">
              <thead><tr><th>handler</th><th class="num">attempt</th><th>outcome</th><th class="num">duration</th><th>at</th><th>replica</th><th>error</th></tr></thead>
              <tbody>
                {runs.map((r) => (
                  <tr>
                    <td data-label="handler"><strong>{r.handler}</strong></td>
                    <td data-label="attempt" class="num">{r.attempt}</td>
                    <td data-label="outcome"><StatusBadge status={r.outcome} /></td>
                    <td data-label="duration" class="num">{r.duration_ms === null ? '–' : `${r.duration_ms} ms`}</td>
                    <td data-label="at">{r.at ?? ''}</td>
                    <td data-label="replica">{r.replica ?? ''}</td>
                    <td data-label="error" class="err">{r.error ?? ''}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
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
  });

  app.get('/deliveries/:id/body', async (c) => {
    const d = await store.get(c.req.param('id'));
    if (!d) return c.json(errorBody('not_found', 'No delivery has this event id.'), 404);
    return c.body(d.body.slice().buffer as ArrayBuffer, 200, {
      'content-type': 'application/octet-stream',
      'content-disposition': `attachment; filename="${d.eventId}.json"`,
      'x-content-type-options': 'nosniff',
    });
  });

  app.post('/deliveries/:id/redeliver', async (c) => {
    const checked = await checkForm(c);
    if (!checked.ok) return checked.answer;
    const id = c.req.param('id').toLowerCase();
    const n = await ctx.replay([id]);
    return c.redirect(`/_podhook/deliveries/${encodeURIComponent(id)}?redelivered=${n > 0 ? 1 : 0}`, 303);
  });

  app.get('/backfills', async (c) => {
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
  });

  app.post('/backfills/:id/cancel', async (c) => {
    const checked = await checkForm(c);
    if (!checked.ok) return checked.answer;
    const cancelled = await store.cancelBackfill(c.req.param('id'), clock());
    return c.redirect(`/_podhook/backfills?cancelled=${cancelled ? 1 : 0}`, 303);
  });

  const deadFilters = (f: Filters): Omit<ScanDeliveriesOptions, 'after' | 'limit'> => {
    const parsed = parseListQuery({ type: f.type ?? '', since: f.since ?? '' });
    return { status: 'dead', eventType: parsed.eventType, since: parsed.since };
  };

  app.get('/redeliver', async (c) => {
    const f: Filters = { type: c.req.query('type') || undefined, since: c.req.query('since') || undefined };
    const count = await ctx.countMatching(deadFilters(f), MAX_BULK);
    return c.html(
      <Layout c={c} title="Redeliver dead letters">
        <h1>Redeliver dead letters</h1>
        <p>
          <strong class="count">{count}{count >= MAX_BULK ? '+' : ''}</strong> dead {count === 1 ? 'letter matches' : 'letters match'}
          {f.type ? <> of type <code>{f.type}</code></> : null}{f.since ? <> received since <code>{f.since}</code></> : null}.
          Their handlers run again in the dispatcher, one more attempt each.
        </p>
        {count === 0 ? <p><a href="/_podhook/">← Back</a></p> : (
          <form method="post" action="/_podhook/redeliver" class="inline">
            <CsrfField c={c} />
            <input type="hidden" name="type" value={f.type ?? ''} />
            <input type="hidden" name="since" value={f.since ?? ''} />
            <input type="hidden" name="expected" value={String(count)} />
            <button type="submit" class="primary">Redeliver {count}</button> <a href={`/_podhook/${query({ status: 'dead', ...f })}`}>Cancel</a>
          </form>
        )}
      </Layout>,
    );
  });

  app.post('/redeliver', async (c) => {
    const checked = await checkForm(c);
    if (!checked.ok) return checked.answer;
    const form = checked.form;
    const f: Filters = { type: (form.type as string) || undefined, since: (form.since as string) || undefined };
    const n = await ctx.replayMatching(deadFilters(f));
    return c.redirect(`/_podhook/${query({ status: 'dead', ...f, redelivered: String(n) })}`, 303);
  });

  return app;
}
