import type { StatsAnswer } from '../admin-queries.js';

/** Each handler's runs, failures and p50/p99 durations over the stats' hours; nothing when no handler ran. */
export function HandlerTable({ stats }: { stats: StatsAnswer }) {
  if (stats.handlers.length === 0) return null;
  return (
    <div class="scroll">
      <table>
        <thead>
          <tr><th>handler</th><th class="num">runs</th><th class="num">failures</th><th class="num">p50</th><th class="num">p99</th></tr>
        </thead>
        <tbody>
          {stats.handlers.map((h) => (
            <tr>
              <td>{h.handler}</td>
              <td class="num">{h.runs}</td>
              <td class="num">{h.failures}</td>
              <td class="num">{h.p50_ms === null ? '–' : `${h.p50_ms} ms`}</td>
              <td class="num">{h.p99_ms === null ? '–' : `${h.p99_ms} ms`}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
