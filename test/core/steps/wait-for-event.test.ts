import { describe, expect, it } from 'vitest';
import { createPodLocator } from '../../../src/core/pods/pod-locator.js';
import { planWait } from '../../../src/core/steps/wait-for-event.js';
import { StepError } from '../../../src/core/steps/step-errors.js';

const POD = '3F2504E0-4F89-41D3-9A0C-0305E82C3301';
const source = { type: 'pod.renewal_failed', receivedAt: 1, payload: { pod: { id: POD } } };
const named = createPodLocator({ orderFields: { podId: 'pod.id', occurredAt: null } });

function refused(fn: () => unknown): StepError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(StepError);
    return error as StepError;
  }
  throw new Error('not refused');
}

describe('planWait: a wait checked at the call', () => {
  it("takes the running event's pod (lower-cased, as ingest reads it), a type or a list, a timeout as ctx.sleep reads it", () => {
    expect(planWait('w', { type: 'pod.renewed', timeout: '30m' }, source, named)).toEqual({ podId: POD.toLowerCase(), types: ['pod.renewed'], timeoutMs: 1_800_000 });
    expect(planWait('w', { type: ['pod.active', 'pod.status.changed'], timeout: 5000 }, source, named)).toMatchObject({ types: ['pod.active', 'pod.status.changed'], timeoutMs: 5000 });
    expect(planWait('w', { type: 'pod.renewed', timeout: '30d', pod: 'ABC' }, source, named)).toMatchObject({ podId: 'abc', timeoutMs: 30 * 86_400_000 });
  });

  it('refuses, permanently and at the call, what cannot be waited for', () => {
    for (const [options, text] of [
      [{ type: 'pod.renewd', timeout: '1m' }, 'must be an event type'],
      [{ type: [], timeout: '1m' }, 'must be an event type'],
      [{ type: 'pod.renewed', timeout: '31d' }, 'up to 30 days'],
      [{ type: 'pod.renewed', timeout: -1 }, 'up to 30 days'],
      [{ type: 'pod.renewed', timeout: '1m', pod: '' }, 'pod must be a pod id'],
    ] as const) {
      const e = refused(() => planWait('w', options as never, source, named));
      expect(e).toMatchObject({ code: 'step_wait', permanent: true });
      expect(e.message).toContain(text);
    }
    const none = refused(() => planWait('w', { type: 'pod.renewed', timeout: '1m' }, { ...source, payload: { pod: {} } }, named));
    expect(none.message).toContain('carries no pod id');
  });

  it('a type with no known pod place names podhook schemas and orderFields, whether it is the running one or a waited one', () => {
    const learned = createPodLocator({ fields: { 'pod.renewal_failed': { podId: ['pod', 'id'] } } });
    const waited = refused(() => planWait('renewed', { type: 'pod.renewed', timeout: '1m' }, source, learned));
    expect(waited.message).toMatch(/waitForEvent "renewed": podhook does not know where pod\.renewed carries its pod id.*podhook schemas.*orderFields/);
    const nothing = createPodLocator({});
    expect(refused(() => planWait('w', { type: 'pod.renewed', timeout: '1m', pod: POD }, source, nothing)).message).toContain('pod.renewed');
    const running = refused(() => planWait('w', { type: 'pod.renewal_failed', timeout: '1m' }, { ...source, type: 'pod.renewed' }, learned));
    expect(running.message).toMatch(/where pod\.renewed carries its pod id, so it cannot tell which pod to wait on: pass `pod`, run `podhook schemas`.*orderFields/);
  });
});
