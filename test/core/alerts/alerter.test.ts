import { describe, expect, it, vi } from 'vitest';
import { createSecretRedactor } from '../../../src/core/observability/redact-secrets.js';
import { createAlerter, type AlerterOptions } from '../../../src/core/alerts/alerter.js';
import { captureLogger } from '../../helpers/capture-logger.js';

const MIN = 60_000;
const SECRET = 'whsec_alerts_test_0123456789';

function setup(overrides: Partial<AlerterOptions> = {}) {
  let now = Date.UTC(2026, 10, 25, 3, 0);
  const sent: Array<{ text: string; podhook: Record<string, unknown> }> = [];
  const pending: Promise<unknown>[] = [];
  const log = captureLogger();
  const alerter = createAlerter({
    post: async (json) => {
      sent.push(JSON.parse(json) as never);
      return 200;
    },
    logger: log.logger,
    clock: () => now,
    minIntervalMs: 10 * MIN,
    sleep: async () => {},
    defer: (work) => void pending.push(work),
    redact: createSecretRedactor(() => [SECRET]),
    ...overrides,
  });
  return {
    alerter,
    sent,
    log,
    advance: (ms: number) => (now += ms),
    settle: async () => void (await Promise.all(pending.splice(0))),
  };
}

const dead = (eventId: string, handler = 'notify', error = 'Error: downstream is down') =>
  ({ eventId, attempt: 3, failures: [{ handler, error }] }) as const;

describe('alerter', () => {
  it('alerts a dead letter with its event id, type, handler and error, never a secret', async () => {
    const s = setup();
    s.alerter.instrument.subscriber!.deliveryFinished!('pod.created', 'dead', dead('e1', 'notify', `Error: refused key ${SECRET}`));
    s.alerter.instrument.subscriber!.deliveryFinished!('pod.created', 'failed', dead('e2'));
    s.alerter.instrument.subscriber!.deliveryFinished!('pod.created', 'processed', { eventId: 'e3', attempt: 1, failures: [] });
    await s.settle();
    expect(s.sent).toHaveLength(1);
    expect(s.sent[0]!.podhook).toMatchObject({ kind: 'dead_letter', event_id: 'e1', event_type: 'pod.created', handler: 'notify', error: 'Error: refused key [redacted]' });
    expect(JSON.stringify(s.sent)).not.toContain(SECRET);
    expect(s.log.text()).not.toContain(SECRET);
    expect(s.log.records().find((r) => r.msg === 'alert sent')).toMatchObject({ alert: 'dead_letter', tries: 1 });
  });

  it('sends one alert per kind and key per interval; the next says how many were held back', async () => {
    const s = setup();
    for (const id of ['e1', 'e2', 'e3']) s.alerter.instrument.subscriber!.deliveryFinished!('pod.created', 'dead', dead(id));
    s.alerter.instrument.subscriber!.deliveryFinished!('pod.created', 'dead', dead('e4', 'other'));
    await s.settle();
    expect(s.sent.map((a) => a.podhook.event_id)).toEqual(['e1', 'e4']);
    s.advance(10 * MIN);
    s.alerter.instrument.subscriber!.deliveryFinished!('pod.created', 'dead', dead('e5'));
    await s.settle();
    expect(s.sent[2]!.podhook).toMatchObject({ event_id: 'e5', suppressed: 2 });
    expect(s.sent[2]!.text).toMatch(/\(2 more dead_letter alerts for notify held back since the last one\.\)$/);
  });

  it('alerts once when a handler fails more than half of at least 5 runs', async () => {
    const s = setup();
    s.alerter.instrument.subscriber!.handlerFinished!('flaky', 'pod.created', 'succeeded', 5);
    for (let i = 0; i < 3; i++) s.alerter.instrument.subscriber!.handlerFinished!('flaky', 'pod.created', 'failed', 5);
    await s.settle();
    expect(s.sent).toEqual([]);
    s.alerter.instrument.subscriber!.handlerFinished!('flaky', 'pod.created', 'timeout', 5);
    // The sixth run is still failing, but the same handler was alerted within the interval.
    s.alerter.instrument.subscriber!.handlerFinished!('flaky', 'pod.created', 'invalid_payload', 5);
    await s.settle();
    expect(s.sent.map((a) => a.podhook)).toEqual([{ kind: 'handler_failing', handler: 'flaky', runs: 5, failures: 4, window_minutes: 15 }]);
  });

  it('logs a downtime as a warning and alerts it; without a URL it is only logged', async () => {
    const s = setup();
    await s.alerter.downtime({ from: Date.UTC(2026, 10, 25, 1, 0), until: Date.UTC(2026, 10, 25, 1, 30) });
    expect(s.sent[0]!.podhook).toMatchObject({ kind: 'downtime', down_minutes: 30 });
    const warn = s.log.records().find((r) => r.alert === 'downtime')!;
    expect(warn).toMatchObject({ level: 40, down_minutes: 30, retries_due_by: '2026-11-25T02:30:00.000Z' });
    expect(warn.msg).toBe(s.sent[0]!.text);

    const quiet = setup({ post: null });
    await quiet.alerter.downtime({ from: 0, until: 30 * MIN });
    expect(quiet.sent).toEqual([]);
    expect(quiet.log.records().filter((r) => r.alert === 'downtime')).toHaveLength(1);
  });

  it('alerts conflicts with event ids and types only', async () => {
    const s = setup();
    await s.alerter.conflict([{ eventId: 'c1', eventType: 'pod.deleted' }]);
    await s.alerter.conflict([]);
    expect(s.sent.map((a) => a.podhook)).toEqual([{ kind: 'conflict', count: 1, events: [{ event_id: 'c1', event_type: 'pod.deleted' }] }]);
  });

  it('never holds up the dispatcher: the subscriber returns while the receiver hangs, and a failed send is only logged', async () => {
    const answers: ((status: number) => void)[] = [];
    const s = setup({ post: () => new Promise<number>((resolve) => answers.push(resolve)) });
    expect(s.alerter.instrument.subscriber!.deliveryFinished!('pod.created', 'dead', dead('e1'))).toBeUndefined();
    // The first try and every retry get 500, each answered once it is sent.
    for (let tries = 1; tries <= 4; tries++) {
      await vi.waitFor(() => expect(answers, `try ${tries} sent`).toHaveLength(tries), { interval: 1 });
      answers[tries - 1]!(500);
    }
    await s.settle();
    expect(s.log.records().find((r) => r.msg === 'alert not delivered')).toMatchObject({ level: 40, alert: 'dead_letter', tries: 4, status: 500 });
  });
});
