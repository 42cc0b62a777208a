import { createExecutionContext, createScheduledController, waitOnExecutionContext } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { afterEach, describe, expect, inject, it, vi } from 'vitest';
import { defineHandler } from '../../src/core/events/define-handler.js';
import { createConsoleLogger } from '../../src/worker/console-logger.js';
import { signDelivery, toRequest } from '../helpers/sign.js';
import { openWorkerTarget } from './worker-target.js';

const HOUR = 3_600_000;
const alwaysFails = defineHandler('pod.created', async function alwaysFails() {
  throw new Error('downstream refused the call');
});

/** What the Node receiver of alert-receiver.global.ts got on this path (the Worker reached it over TCP). */
async function receivedOn(path: string): Promise<Array<{ text: string; podhook: Record<string, unknown> }>> {
  const bodies = (await (await fetch(`${inject('alertReceiverUrl')}/received${path}`)).json()) as string[];
  return bodies.map((b) => JSON.parse(b) as never);
}

describe('Worker alerts (sent under waitUntil, to a receiver on 127.0.0.1)', () => {
  afterEach(() => vi.restoreAllMocks());

  it('the cron finds a downtime in the D1 heartbeat, logs it and alerts it', async () => {
    const path = `/cron-${crypto.randomUUID()}`;
    const lines: string[] = [];
    vi.spyOn(console, 'log').mockImplementation((line: unknown) => void lines.push(String(line)));
    vi.spyOn(console, 'warn').mockImplementation((line: unknown) => void lines.push(String(line)));
    const t = await openWorkerTarget(
      { secrets: ['s'] },
      { db: env.DB, logger: createConsoleLogger({ level: 'info' }), vars: { DISPATCHER: 'on', ALERT_WEBHOOK_URL: `${inject('alertReceiverUrl')}${path}` } },
    );
    const lastBeat = t.now() - 2 * HOUR;
    await t.store.writeHeartbeat(lastBeat);

    const ctx = createExecutionContext();
    await t.worker.scheduled!(createScheduledController({ scheduledTime: t.now(), cron: '* * * * *' }), t.env, ctx);
    await waitOnExecutionContext(ctx);

    const alerts = await receivedOn(path);
    expect(alerts).toHaveLength(1);
    expect(alerts[0]!.podhook).toMatchObject({
      kind: 'downtime',
      down_from: new Date(lastBeat).toISOString(),
      down_until: new Date(t.now()).toISOString(),
      down_minutes: 120,
      probably_disabled: false,
      retries_due_by: new Date(t.now() + 180 * 60_000).toISOString(),
    });
    expect(await t.store.readHeartbeat()).toEqual({ beatAt: t.now(), downtime: { from: lastBeat, until: t.now() } });
    const warn = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((r) => r.alert === 'downtime');
    expect(warn).toMatchObject({ msg: alerts[0]!.text });

    // The next cron, a minute later, finds a fresh heartbeat: no second alert.
    t.setNow(t.now() + 60_000);
    const next = createExecutionContext();
    await t.worker.scheduled!(createScheduledController({ scheduledTime: t.now(), cron: '* * * * *' }), t.env, next);
    await waitOnExecutionContext(next);
    expect(await receivedOn(path)).toHaveLength(1);
  });

  it('alerts a dead letter from the dispatch that runs under waitUntil after the 200, with no body or secret', async () => {
    const path = `/dead-${crypto.randomUUID()}`;
    const t = await openWorkerTarget(
      { secrets: ['whsec_worker_alert_secret_1'] },
      {
        db: env.DB,
        handlers: [alwaysFails],
        vars: { DISPATCHER: 'on', DISPATCH_MAX_ATTEMPTS: '1', ALERT_WEBHOOK_URL: `${inject('alertReceiverUrl')}${path}` },
      },
    );
    const marker = 'worker-body-marker-5c2a';
    const d = signDelivery({ secret: 'whsec_worker_alert_secret_1', t: Math.floor(t.now() / 1000), body: { pod: { id: 'p', name: marker } } });
    // t.fetch resolves once the invocation's waitUntil work (dispatch, then the alert) is done.
    expect((await t.fetch(toRequest(d))).status).toBe(200);
    expect(await t.store.get(d.eventId)).toMatchObject({ status: 'dead', attempts: 1 });

    const alerts = await receivedOn(path);
    expect(alerts.map((a) => a.podhook)).toEqual([
      expect.objectContaining({ kind: 'dead_letter', event_id: d.eventId, event_type: 'pod.created', handler: 'alwaysFails', error: 'Error: downstream refused the call' }),
    ]);
    const raw = JSON.stringify(alerts);
    for (const leak of [marker, 'whsec_worker_alert_secret_1', d.headers['x-svc-signature']!]) expect(raw).not.toContain(leak);
  });
});
