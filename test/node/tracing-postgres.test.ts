// Traces across replicas (issue 29): a delivery received by one `podhook serve` on PostgreSQL and
// run by another links, from each of its attempts there, to the receipt recorded by the first.
import pg from 'pg';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ATTR, SPAN } from '../../src/core/tracing/names.js';
import { startOtlpReceiver, type OtlpReceiver } from '../helpers/otlp-receiver.js';
import { freshDatabaseUrl } from '../helpers/postgres.js';
import { FAST_LEASES, replicaPool, send, waitReady } from '../helpers/replicas.js';
import { signDelivery, TEST_SECRET } from '../helpers/sign.js';
import { fileURLToPath } from 'node:url';

const TRACING_REGISTRY = fileURLToPath(new URL('../fixtures/tracing-handlers.ts', import.meta.url));
const pool = replicaPool();
let otlp: OtlpReceiver | undefined;
afterEach(async () => {
  await pool.stopAll();
  await otlp?.close();
});

describe('traces across replicas on PostgreSQL', () => {
  it('links every attempt run by one replica to the receipt recorded by another', async () => {
    otlp = await startOtlpReceiver();
    const url = await freshDatabaseUrl();
    const common = { DATABASE_URL: url, SVC_WEBHOOK_SECRET: TEST_SECRET, OTEL_BSP_SCHEDULE_DELAY: '50', RETRY_BASE_MS: '1', RETRY_MAX_MS: '5', ...FAST_LEASES };
    // Each replica exports to a path of its own, so the test knows which one recorded a span.
    const receiving = await pool.start({ ...common, DISPATCHER: 'off', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${otlp.url}/receiving/v1/traces` }, { handlers: TRACING_REGISTRY });
    const running = await pool.start({ ...common, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${otlp.url}/running/v1/traces` }, { handlers: TRACING_REGISTRY });
    await waitReady([receiving.url, running.url]);

    const d = signDelivery({ t: Math.floor(Date.now() / 1000) });
    expect((await send(receiving.url, d)).status).toBe(200);
    await vi.waitFor(() => expect(otlp!.named(SPAN.dispatch).filter((s) => s.attributes[ATTR.outcome] === 'processed')).toHaveLength(1), { timeout: 20_000, interval: 50 });

    const [receipt] = otlp.named('POST /webhooks');
    expect(receipt).toMatchObject({ path: '/receiving/v1/traces', attributes: { [ATTR.eventId]: d.eventId, [ATTR.outcome]: 'new' } });
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const { rows } = await client.query<{ trace_parent: string }>('select trace_parent from deliveries where event_id = $1', [d.eventId]);
    await client.end();
    expect(rows[0]!.trace_parent).toBe(`00-${receipt!.traceId}-${receipt!.spanId}-01`);

    // The first attempt fails, the retry succeeds: both on the other replica, both linked to the receipt.
    const attempts = otlp.named(SPAN.dispatch);
    expect(attempts.map((a) => [a.path, a.attributes[ATTR.attempt], a.attributes[ATTR.outcome]]).sort()).toEqual([
      ['/running/v1/traces', 1, 'failed'],
      ['/running/v1/traces', 2, 'processed'],
    ]);
    for (const a of attempts) expect(a.links).toEqual([{ traceId: receipt!.traceId, spanId: receipt!.spanId }]);
    expect(otlp.spans.filter((s) => s.path === '/receiving/v1/traces' && s.name !== 'POST /webhooks' && s.name !== SPAN.claim)).toEqual([]);
  });
});
