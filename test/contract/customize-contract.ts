import { describe, expect, it } from 'vitest';
import type { PodhookApp } from '../../src/http/create-app.js';
import { teamApp, type TeamApp } from '../fixtures/team-app.js';
import { FIXED_NOW_MS, signDelivery, toRequest } from '../helpers/sign.js';
import type { HttpTarget } from './http-contract.js';

const URL_BASE = 'http://podhook.test';

/**
 * A team's middleware and routes (`customize`, what src/app.ts supplies) on the app: they wrap
 * ingest and their routes answer. One suite, run on the Node server and in workerd.
 */
export function describeCustomizeContract(name: string, open: (customize: (app: PodhookApp) => void) => Promise<HttpTarget>) {
  describe(`customizeApp: ${name}`, () => {
    const withTeam = (fn: (t: HttpTarget, team: TeamApp) => Promise<void>) => async () => {
      const team = teamApp();
      const target = await open(team.customize);
      target.setNow(FIXED_NOW_MS);
      try {
        await fn(target, team);
      } finally {
        await target.close();
      }
    };

    it(
      "runs the team's middleware around ingest, with podhook's request id",
      withTeam(async (t, team) => {
        const d = signDelivery();
        const res = await t.fetch(toRequest(d, `${URL_BASE}/webhooks`, { 'x-request-id': 'team-req-0001' }));
        expect(res.status).toBe(200);
        expect(await res.json()).toEqual({ received: true, event_id: d.eventId, duplicate: false });
        expect(res.headers.get('x-team')).toBe('wrapped');
        expect(res.headers.get('x-request-id')).toBe('team-req-0001');
        expect(team.seen).toEqual([{ method: 'POST', path: '/webhooks', requestId: 'team-req-0001' }]);
        expect(await t.store.get(d.eventId)).toMatchObject({ status: 'queued', deliveryCount: 1 });
      }),
    );

    it(
      'lets a team middleware refuse a delivery before ingest: nothing is stored',
      withTeam(async (t, team) => {
        const d = signDelivery();
        const res = await t.fetch(toRequest(d, `${URL_BASE}/webhooks`, { 'x-team-block': 'yes' }));
        expect(res.status).toBe(403);
        expect(((await res.json()) as { error: { code: string } }).error.code).toBe('blocked_by_team');
        expect(res.headers.get('x-request-id')).toMatch(/^[A-Za-z0-9._-]{8,64}$/);
        expect(team.seen).toEqual([]);
        expect(await t.store.get(d.eventId)).toBeNull();
      }),
    );

    it(
      'verifies and stores the exact bytes when a team middleware read the body first',
      withTeam(async (t, team) => {
        const d = signDelivery({ body: '{"pod":{"id":"p1","name":"caf\u00e9"}}  ' });
        const res = await t.fetch(toRequest(d, `${URL_BASE}/webhooks`, { 'x-team-read-body': 'yes' }));
        expect(res.status).toBe(200);
        expect(Array.from(team.bodies[0]!)).toEqual(Array.from(d.body));
        expect(Array.from((await t.store.get(d.eventId))!.body)).toEqual(Array.from(d.body));
      }),
    );

    it(
      'keeps the body cap when a team middleware read the body first',
      withTeam(async (t) => {
        const d = signDelivery({ body: 'x'.repeat(5000) });
        const res = await t.fetch(toRequest(d, `${URL_BASE}/webhooks`, { 'x-team-read-body': 'yes' }));
        expect(res.status).toBe(413);
        expect(await t.store.get(d.eventId)).toBeNull();
      }),
    );

    it(
      "answers the team's own route, and podhook's routes still answer",
      withTeam(async (t, team) => {
        const res = await t.fetch(new Request(`${URL_BASE}/team/hello`, { headers: { 'x-request-id': 'team-req-0002' } }));
        expect(res.status).toBe(200);
        expect(await res.text()).toBe('hello team-req-0002');
        expect(res.headers.get('x-team')).toBe('wrapped');
        expect((await t.fetch(new Request(`${URL_BASE}/healthz`))).status).toBe(200);
        expect((await t.fetch(new Request(`${URL_BASE}/nope`))).status).toBe(404);
        expect(team.seen.map((s) => s.path)).toEqual(['/team/hello', '/healthz', '/nope']);
      }),
    );
  });
}
