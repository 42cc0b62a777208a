import { describe, expect, it } from 'vitest';
import { conflictAlert, deadLetterAlert, deadOnArrivalAlert, downtimeAlert, formatDuration, handlerFailingAlert, schemaDriftAlert } from '../../../src/core/alerts/alert-message.js';
import { createSecretRedactor } from '../../../src/core/observability/redact-secrets.js';
import { scrubError } from '../../../src/core/observability/scrub-error.js';

const MIN = 60_000;
const T = Date.UTC(2026, 10, 25, 1, 0);

describe('alert messages', () => {
  it('downtime under the ladder: how long, the ladder, and until when the retries arrive', () => {
    const { key, payload } = downtimeAlert({ from: T, until: T + 125 * MIN });
    expect(key).toBe('receiver');
    expect(payload.text).toBe(
      'podhook was down for 2 h 5 min (from 2026-11-25 01:00 UTC until 2026-11-25 03:05 UTC). ' +
        'The service retries deliveries it sent meanwhile after 1, 5, 15, 60, 180, 360 and 720 minutes: they should arrive by 2026-11-25 06:05 UTC.',
    );
    expect(payload.text).not.toMatch(/\n/);
    expect(payload.podhook).toEqual({
      kind: 'downtime',
      down_from: '2026-11-25T01:00:00.000Z',
      down_until: '2026-11-25T03:05:00.000Z',
      down_minutes: 125,
      retry_ladder_minutes: [1, 5, 15, 60, 180, 360, 720],
      retries_due_by: '2026-11-25T06:05:00.000Z',
      probably_disabled: false,
      disabled_around: null,
      check_command: null,
    });
    expect(payload.text).not.toContain('podhook pods');
  });

  it('downtime past about 22.4 hours: the webhook is probably disabled (disabled_by_us_at) and must be re-enabled', () => {
    const { payload } = downtimeAlert({ from: T, until: T + 26 * 60 * MIN });
    expect(payload.text).toMatch(/^podhook was down for 1 d 2 h \(from 2026-11-25 01:00 UTC until 2026-11-26 03:00 UTC\)\. /);
    expect(payload.text).toContain('about 22.4 hours');
    expect(payload.text).toContain('disabled_by_us_at set around 2026-11-25 23:21 UTC');
    expect(payload.text).toContain('Re-enable it');
    expect(payload.text).toContain('run `podhook pods --drift` to compare the service\'s pods with what podhook holds');
    expect(payload.podhook).toMatchObject({ probably_disabled: true, retries_due_by: null, disabled_around: '2026-11-25T23:21:00.000Z', check_command: 'podhook pods --drift' });
  });

  it('dead on arrival: the reason, no handler, keyed by the type apart from dispatch deaths', () => {
    const a = deadOnArrivalAlert({ eventId: 'e3', eventType: 'pod.created', reason: 'empty_body: the body is empty' });
    expect(a.kind).toBe('dead_letter');
    expect(a.key).toBe('arrival:pod.created');
    expect(a.payload.text).toBe(
      'podhook: delivery e3 (pod.created) is dead on arrival: empty_body: the body is empty. It was stored and answered 200, and no handler will run it; ' +
        'look at it with `podhook deliveries --status dead` and tell the sender\'s operator.',
    );
    expect(a.payload.podhook).toEqual({
      kind: 'dead_letter',
      event_id: 'e3',
      event_type: 'pod.created',
      attempts: 0,
      handler: null,
      error: 'empty_body: the body is empty',
      failures: [],
      on_arrival: true,
    });
  });

  it('dead letter: event id, type, handler and error, keyed by the handler', () => {
    const a = deadLetterAlert({ eventId: 'e1', eventType: 'pod.created', attempts: 3, failures: [{ handler: 'notify', error: 'Error: <down> & out' }] });
    expect(a.key).toBe('notify');
    expect(a.payload.text).toBe('podhook: delivery e1 (pod.created) is dead after 3 attempts: notify: Error: &lt;down&gt; &amp; out. Fix the cause, then `podhook replay e1`.');
    expect(a.payload.podhook).toEqual({
      kind: 'dead_letter',
      event_id: 'e1',
      event_type: 'pod.created',
      attempts: 3,
      handler: 'notify',
      error: 'Error: <down> & out',
      failures: [{ handler: 'notify', error: 'Error: <down> & out' }],
    });
    // No handler failed (the stored body could not be parsed): keyed by the type.
    const unparsable = deadLetterAlert({ eventId: 'e2', eventType: 'pod.deleted', attempts: 0, failures: [] });
    expect(unparsable.key).toBe('pod.deleted');
    expect(unparsable.payload.podhook).toMatchObject({ handler: null, error: null });
  });

  it('handler failing and conflict (ids and types only, the text names the first three)', () => {
    expect(handlerFailingAlert({ handler: 'h', runs: 6, failures: 4, windowMinutes: 15 }).payload.text).toMatch(/^podhook: handler h failed 4 of its 6 runs in the last 15 minutes/);
    const events = Array.from({ length: 5 }, (_, i) => ({ eventId: `id${i}`, eventType: 'pod.created' }));
    const c = conflictAlert({ events });
    expect(c.payload.text).toMatch(/^podhook: 5 deliveries were quarantined as conflicts: id0 \(pod.created\), id1 \(pod.created\), id2 \(pod.created\) and 2 more\./);
    expect(c.payload.podhook).toEqual({ kind: 'conflict', count: 5, events: events.map((e) => ({ event_id: e.eventId, event_type: e.eventType })) });
  });

  it('schema drift: type, path, kind and event id, keyed by type, kind and the learned place; the way back in the text', () => {
    const a = schemaDriftAlert({ eventId: 'e1', eventType: 'pod.created', path: '$["<b>"]', place: '$', change: 'new_field' });
    expect(a.kind).toBe('schema_drift');
    expect(a.key).toBe('pod.created new_field $');
    expect(a.payload.podhook).toEqual({ kind: 'schema_drift', event_type: 'pod.created', path: '$["<b>"]', change: 'new_field', event_id: 'e1' });
    expect(a.payload.text).toMatch(/^podhook: pod\.created payloads changed at \$\["&lt;b&gt;"\] \(new field\), first seen in delivery e1\./);
    expect(a.payload.text).toContain('`podhook replay --status dead --type pod.created`');
  });

  it('formats durations for people', () => {
    expect([40_000, 7 * MIN, 60 * MIN, 1441 * MIN].map(formatDuration)).toEqual(['40 s', '7 min', '1 h', '1 d 1 min']);
  });
});

describe('scrubError', () => {
  it('keeps one line, drops secrets and the body quote of a JSON parse error, and caps the length', () => {
    expect(scrubError('Error: bad\n  token whsec_live_123456789 used', createSecretRedactor(() => ['whsec_live_123456789']))).toBe('Error: bad token [redacted] used');
    // Redacted before it is cut: a secret across the 300th character is not left half-quoted.
    const across = scrubError(`${'x'.repeat(295)}whsec_live_123456789`, createSecretRedactor(() => ['whsec_live_123456789']));
    expect(across).toBe(`${'x'.repeat(295)}[redacted]`.slice(0, 299) + '…');
    expect(scrubError(`invalid_json: Unexpected token 'p', "password=hunter2" is not valid JSON`)).toBe('invalid_json: the stored body is not valid JSON');
    const long = scrubError('x'.repeat(1000));
    expect(long).toHaveLength(300);
    expect(long.endsWith('…')).toBe(true);
  });
});
