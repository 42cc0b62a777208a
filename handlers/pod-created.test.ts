// A unit test of one handler module: runHandler runs it as the dispatcher does (schema, time
// limit, AbortSignal) and returns what it logged. Delete this file with pod-created.ts.
import { describe, expect, it } from 'vitest';
import { runHandler, testEvent } from 'podhook/testing';
import podCreated from './pod-created.js';

describe('pod-created', () => {
  it('logs the new pod with its fields', async () => {
    const event = testEvent('pod.created', { payload: { pod: { name: 'research-bot' }, tier: 'pro' } });
    const result = await runHandler(podCreated, event);
    expect(result.ok).toBe(true);
    expect(result.logs).toMatchObject([{ level: 'info', msg: 'pod created', pod_id: event.payload.pod.id, pod_name: 'research-bot', tier: 'pro' }]);
  });

  it('binds the attempt to its log lines on a retry', async () => {
    const result = await runHandler(podCreated, testEvent('pod.created', { attempt: 2 }));
    expect(result.logs).toMatchObject([{ msg: 'pod created', handler: 'podCreated', attempt: 2 }]);
  });
});
