import { describe, expect, it } from 'vitest';
import { ALERT_RETRY_DELAYS_MS, postAlert } from '../../../src/core/alerts/post-alert.js';

/** A post that answers from a script: a status, or an error to throw. */
function scripted(answers: Array<number | Error>) {
  const sent: string[] = [];
  const post = async (json: string) => {
    sent.push(json);
    const next = answers.shift() ?? 200;
    if (next instanceof Error) throw next;
    return next;
  };
  const slept: number[] = [];
  const sleep = async (ms: number) => void slept.push(ms);
  return { post, sent, slept, sleep };
}

describe('postAlert', () => {
  it('retries after an unreachable receiver, a 429 and a 503, with growing pauses', async () => {
    const s = scripted([new Error('connect ECONNREFUSED'), 429, 503, 204]);
    expect(await postAlert(s.post, '{"text":"x"}', { sleep: s.sleep })).toEqual({ ok: true, tries: 4 });
    expect(s.slept).toEqual([...ALERT_RETRY_DELAYS_MS]);
    expect(s.sent).toEqual(Array(4).fill('{"text":"x"}'));
  });

  it('gives up after four tries, saying why', async () => {
    const s = scripted([500, 500, 500, 502, 200]);
    expect(await postAlert(s.post, '{}', { sleep: s.sleep })).toEqual({ ok: false, tries: 4, status: 502, error: null });
    expect(s.sent).toHaveLength(4);
  });

  it('does not retry an answer a retry cannot change (400, 404, a redirect)', async () => {
    for (const status of [400, 404, 302]) {
      const s = scripted([status]);
      expect(await postAlert(s.post, '{}', { sleep: s.sleep })).toEqual({ ok: false, tries: 1, status, error: null });
      expect(s.slept).toEqual([]);
    }
  });
});
