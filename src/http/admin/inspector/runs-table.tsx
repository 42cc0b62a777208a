import type { RunEntry } from '../admin-queries.js';
import { StatusBadge } from './badges.js';

/** A delivery's handler runs in order (`readRuns`): attempt, outcome, duration, when, which replica, the error. */
export function RunsTable({ runs }: { runs: RunEntry[] }) {
  if (runs.length === 0) return <p class="empty">No handler has run it.</p>;
  return (
    <div class="scroll">
      <table class="runs">
        <thead><tr><th>handler</th><th class="num">attempt</th><th>outcome</th><th class="num">duration</th><th>at</th><th>replica</th><th>error</th></tr></thead>
        <tbody>
          {runs.map((r) => (
            <tr>
              <td data-label="handler"><strong>{r.handler}</strong></td>
              <td data-label="attempt" class="num">{r.attempt}</td>
              <td data-label="outcome"><StatusBadge status={r.outcome} /></td>
              <td data-label="duration" class="num">{r.duration_ms === null ? '–' : `${r.duration_ms} ms`}</td>
              <td data-label="at">{r.at ?? ''}</td>
              <td data-label="replica">{r.replica ?? ''}</td>
              <td data-label="error" class="err">{r.error ?? ''}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
