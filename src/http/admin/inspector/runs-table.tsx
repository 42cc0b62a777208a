import type { RunEntry, StepEntry } from '../admin-queries.js';
import { iso } from './_format.js';
import { ParkedBadge, StatusBadge } from './badges.js';

/** What a step's result is, never what it holds: its size, that it is sealed, or a sleep's wake time. */
function resultOf(s: StepEntry): string {
  if (s.sealed) return 'sealed';
  if (s.kind === 'sleep') return s.wake_at ? `wakes ${iso(Date.parse(s.wake_at))}` : '';
  if (s.kind === 'wait') return s.state === 'done' ? 'timed out' : s.wake_at ? `until ${iso(Date.parse(s.wake_at))}` : '';
  return s.result_bytes === null ? '' : `${s.result_bytes} bytes`;
}

/** A handler's durable steps in order: name, kind, state, attempts, duration, when, the result's size. */
function StepsTable({ steps }: { steps: StepEntry[] }) {
  return (
    <table class="steps">
      <thead><tr><th class="num">#</th><th>step</th><th>kind</th><th>state</th><th class="num">attempts</th><th class="num">duration</th><th>started</th><th>result</th><th>error</th></tr></thead>
      <tbody>
        {steps.map((s) => (
          <tr>
            <td data-label="#" class="num">{s.seq}</td>
            <td data-label="step"><code>{s.name}</code></td>
            <td data-label="kind">{s.kind}</td>
            <td data-label="state"><StatusBadge status={s.state} /></td>
            <td data-label="attempts" class="num">{s.attempts}</td>
            <td data-label="duration" class="num">{s.duration_ms === null ? '–' : `${s.duration_ms} ms`}</td>
            <td data-label="started">{iso(Date.parse(s.started_at))}</td>
            <td data-label="result" class={s.sealed ? 'sealed' : undefined}>
              {s.matched_event_id ? <>woken by <a href={`/_podhook/deliveries/${s.matched_event_id}`}><code>{s.matched_event_id}</code></a></> : resultOf(s)}
            </td>
            <td data-label="error" class="err">{s.error ?? ''}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/**
 * A delivery's handler runs in order (`readRuns`): attempt, outcome, duration, when, which replica,
 * the error; under each handler's last run, its durable steps, and where a parked run sleeps until when.
 */
export function RunsTable({ runs }: { runs: RunEntry[] }) {
  if (runs.length === 0) return <p class="empty">No handler has run it.</p>;
  return (
    <div class="scroll">
      <table class="runs">
        <thead><tr><th>handler</th><th class="num">attempt</th><th>outcome</th><th class="num">duration</th><th>at</th><th>replica</th><th>error</th></tr></thead>
        <tbody>
          {runs.map((r) => (
            <>
              <tr>
                <td data-label="handler"><strong>{r.handler}</strong></td>
                <td data-label="attempt" class="num">{r.attempt}</td>
                <td data-label="outcome"><StatusBadge status={r.outcome} /></td>
                <td data-label="duration" class="num">{r.duration_ms === null ? '–' : `${r.duration_ms} ms`}</td>
                <td data-label="at">{r.at ?? ''}</td>
                <td data-label="replica">{r.replica ?? ''}</td>
                <td data-label="error" class="err">{r.error ?? ''}</td>
              </tr>
              {r.steps?.length || r.parked ? (
                <tr class="steps" data-handler={r.handler}>
                  <td colspan={7} data-label="steps">
                    {r.parked ? (
                      <p class="parked">
                        {r.parked.waiting_for ? <>Waiting at <code>{r.parked.step}</code> for {r.parked.waiting_for.types.join(' or ')} of pod <code>{r.parked.waiting_for.pod_id}</code> until</> : <>Parked at sleep <code>{r.parked.step}</code></>}{' '}
                        <ParkedBadge wakeAt={r.parked.wake_at} waitingFor={r.parked.waiting_for?.types} />
                      </p>
                    ) : null}
                    {r.steps?.length ? <StepsTable steps={r.steps} /> : null}
                  </td>
                </tr>
              ) : null}
            </>
          ))}
        </tbody>
      </table>
    </div>
  );
}
