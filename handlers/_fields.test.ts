// The example handlers' field helpers: where payloadFields (from `podhook schemas`) says the pod
// id is, they read it there; without it they guess. Delete this file with _fields.ts.
import { describe, expect, it, vi } from 'vitest';
import { podFields } from './_fields.js';

// A module learned from traffic whose pod.created events carry the pod under data.pod.
vi.mock('./_payloads.js', () => ({ payloadFields: { 'pod.created': { podId: ['data', 'pod', 'id'] }, 'pod.renewed': { podId: ['pod_id'] } } }));

const ID = '0b6f7c2e-4a1d-4c8e-9f3a-2d5e6b7c8a90';

describe('podFields', () => {
  it('reads the pod where payloadFields says, not where the guess would look first', () => {
    const payload = { pod: { id: 'a decoy', name: 'decoy' }, data: { pod: { id: ID, name: 'research-bot', status: 'active' } } };
    expect(podFields({ type: 'pod.created', payload })).toMatchObject({ pod_id: ID, pod_name: 'research-bot', status: 'active' });
  });

  it('reads a top-level pod id where it was learned', () => {
    expect(podFields({ type: 'pod.renewed', payload: { pod_id: ID, pod: { id: 'other' } } })).toMatchObject({ pod_id: ID });
  });

  it('guesses where nothing was learned: payload.pod, payload.data.pod, the top level', () => {
    expect(podFields({ type: 'pod.active', payload: { pod: { id: ID, name: 'n' } } })).toMatchObject({ pod_id: ID, pod_name: 'n' });
    expect(podFields({ type: 'pod.active', payload: { pod_id: ID } })).toMatchObject({ pod_id: ID });
  });
});
