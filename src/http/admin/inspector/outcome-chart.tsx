import type { StatsAnswer } from '../admin-queries.js';

/** Stacked from the bottom in this order; colours are in the inspector's style sheet. */
const OUTCOMES = ['processed', 'ignored', 'queued', 'failed', 'dead', 'quarantined'] as const;

/**
 * The last hours' deliveries by outcome as a server-rendered SVG bar chart: one stacked bar per
 * hour, scaled to the busiest hour. No script, so the strict CSP holds.
 */
export function OutcomeChart({ stats }: { stats: StatsAnswer }) {
  const hours = stats.deliveries_per_hour;
  const width = 720;
  const height = 160;
  const top = 14;
  const bottom = 1;
  const slot = width / Math.max(1, hours.length);
  const max = Math.max(1, ...hours.map((h) => OUTCOMES.reduce((sum, o) => sum + h[o], 0)));
  const scale = (n: number) => (n / max) * (height - top - bottom);
  const total = hours.reduce((sum, h) => sum + OUTCOMES.reduce((s, o) => s + h[o], 0), 0);
  return (
    <figure class="chart">
      <svg viewBox={`0 0 ${width} ${height}`} role="img" aria-label={`${total} deliveries in the last ${stats.hours} hours by outcome`} preserveAspectRatio="none">
        <line x1="0" y1={height - bottom} x2={width} y2={height - bottom} class="axis" />
        {hours.map((h, i) => {
          let y = height - bottom;
          return (
            <g>
              {OUTCOMES.filter((o) => h[o] > 0).map((o) => {
                const hgt = Math.max(1, scale(h[o]));
                y -= hgt;
                return (
                  <rect class={`bar o-${o}`} x={(i * slot + 1).toFixed(1)} y={y.toFixed(1)} width={(slot - 2).toFixed(1)} height={hgt.toFixed(1)}>
                    <title>{`${h.hour.slice(0, 13)}h: ${h[o]} ${o}`}</title>
                  </rect>
                );
              })}
            </g>
          );
        })}
      </svg>
      {/* Labels in HTML, not in the SVG: the chart stretches to the screen's width and would squash text. */}
      <div class="ticks">
        <span>{hours[0]?.hour.slice(11, 16)}</span>
        <span>{hours[Math.floor(hours.length / 2)]?.hour.slice(11, 16)}</span>
        <span>now</span>
      </div>
      <figcaption>
        <span class="muted">busiest hour: {max}</span>
        {OUTCOMES.map((o) => <span class={`key o-${o}`}>{o}</span>)} <span class="muted">one bar per hour, UTC</span>
      </figcaption>
    </figure>
  );
}
