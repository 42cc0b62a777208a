import { GIVE_UP_AFTER_MS, SENDER_RETRY_MINUTES } from '../../../core/ingest/sender-retry-ladder.js';
import type { StatsAnswer } from '../admin-queries.js';
import { query } from './_format.js';
import { PODS_DRIFT_COMMAND } from '../../../core/alerts/alert-message.js';

/** The alerts atop the deliveries page: dead letters to review or redeliver, and the last downtime against the sender's retries. */
export function Banner({ stats }: { stats: StatsAnswer }) {
  const d = stats.last_downtime;
  return (
    <>
      {stats.dead_letters > 0 ? (
        <p class="banner dead" role="alert">
          <strong>{stats.dead_letters} dead {stats.dead_letters === 1 ? 'letter' : 'letters'}</strong>: their handlers gave up.{' '}
          <a href={`/_podhook/${query({ status: 'dead' })}`}>Review</a> · <a href={`/_podhook/redeliver${query({ status: 'dead' })}`}>Redeliver all…</a>
        </p>
      ) : null}
      {d ? (
        <p class="banner down" role="alert">
          <strong>podhook was down for {d.minutes < 120 ? `${d.minutes} min` : `${+(d.minutes / 60).toFixed(1)} h`}</strong> ({d.from} to {d.until}). The sender retries after {SENDER_RETRY_MINUTES.join(', ')} min;
          {d.minutes * 60_000 > GIVE_UP_AFTER_MS
            ? ` past about 22.4 h it has probably disabled the webhook: re-enable it, and run ${PODS_DRIFT_COMMAND} (or GET /_podhook/api/pods?drift=true) to see the pods podhook may have missed.`
            : ' deliveries sent meanwhile should arrive on its retries.'}
        </p>
      ) : null}
    </>
  );
}
