// Drift at the door on the Worker, inside workerd: the check runs under waitUntil after the 200,
// records the differences in D1 and alerts once per type and path (to a receiver on 127.0.0.1).
import { env } from 'cloudflare:workers';
import { describe, expect, inject, it } from 'vitest';
import { defineHandler } from '../../src/core/events/define-handler.js';
import { shapeToZod } from '../../src/core/shapes/index.js';
import { signDelivery, toRequest } from '../helpers/sign.js';
import { fittingPayload, learnedShapes } from '../fixtures/shapes/learned-samples.js';
import { openWorkerTarget } from './worker-target.js';

const SECRET = 'whsec_worker_drift_secret_1';

async function receivedOn(path: string): Promise<Array<{ text: string; podhook: Record<string, unknown> }>> {
  const bodies = (await (await fetch(`${inject('alertReceiverUrl')}/received${path}`)).json()) as string[];
  return bodies.map((b) => JSON.parse(b) as never);
}

describe('Worker: payload drift at the door', () => {
  it('records a drifted delivery in D1 after the 200, dispatches it, and alerts once per type and path', async () => {
    const path = `/drift-${crypto.randomUUID()}`;
    const shapes = learnedShapes();
    const ran: string[] = [];
    const t = await openWorkerTarget(
      { secrets: [SECRET] },
      {
        db: env.DB,
        handlers: [defineHandler('pod.created', async function welcome(event) { ran.push(event.id); })],
        payloads: { shapes, schemas: { 'pod.created': shapeToZod(shapes.types['pod.created']!.shape) } },
        vars: { DISPATCHER: 'on', ALERT_WEBHOOK_URL: `${inject('alertReceiverUrl')}${path}` },
      },
    );
    const deliver = async (body: object) => {
      const d = signDelivery({ secret: SECRET, t: Math.floor(t.now() / 1000), body });
      // Resolves once the invocation's waitUntil work (dispatch, drift check, alerts) is done.
      expect((await t.fetch(toRequest(d))).status).toBe(200);
      return d.eventId;
    };

    const fits = await deliver(fittingPayload(1));
    expect(await t.store.get(fits)).toMatchObject({ status: 'processed' });
    expect((await t.store.get(fits))!.drift).toBeUndefined();

    const marker = 'worker-region-marker-1c4e';
    const drifted = await deliver({ ...fittingPayload(2), pod: { ...fittingPayload(2).pod, region: marker } });
    expect(await t.store.get(drifted)).toMatchObject({ status: 'processed', drift: [{ path: '$.pod.region', kind: 'new_field', message: 'new field: string' }] });
    const again = await deliver({ ...fittingPayload(3), pod: { ...fittingPayload(3).pod, region: marker } });
    expect((await t.store.get(again))!.drift).toHaveLength(1);
    expect(ran).toEqual([fits, drifted, again]);

    const alerts = await receivedOn(path);
    expect(alerts.map((a) => a.podhook)).toEqual([{ kind: 'schema_drift', event_type: 'pod.created', path: '$.pod.region', change: 'new_field', event_id: drifted }]);
    expect(JSON.stringify(alerts)).not.toContain(marker);
    expect((await t.store.list({ drift: true })).map((d) => d.eventId).sort()).toEqual([drifted, again].sort());
  });
});
