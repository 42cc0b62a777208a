// OpenTelemetry traces from a real `podhook serve` (issue 29): spans exported as OTLP/HTTP JSON to a
// receiver on 127.0.0.1, the receipt's context stored with the delivery and linked from every
// attempt, `podhook replay` joining the same trace, nothing secret in any exported byte, and
// nothing of the SDK loaded when the variables are unset.
import { once } from 'node:events';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ATTR, SPAN } from '../../src/core/tracing/names.js';
import { ORDERED_REGISTRY, RECORDING_REGISTRY } from '../fixtures/registry-paths.js';
import { DOWNSTREAM_SPAN } from '../fixtures/tracing-handlers.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.js';
import { ADMIN_TOKEN } from '../helpers/remote-podhook.js';
import { signDelivery, TEST_SECRET } from '../helpers/sign.js';
import { BIN, runCli, spawnServer, type ServerProcess } from '../helpers/spawn-podhook.js';
import { dbIn, useTempDir } from '../helpers/temp-dir.js';
import { freePort } from '../helpers/free-port.js';

const TRACING_REGISTRY = fileURLToPath(new URL('../fixtures/tracing-handlers.ts', import.meta.url));
const RECORD_LOADS = fileURLToPath(new URL('../fixtures/record-module-loads.mjs', import.meta.url));
/** `podhook serve` as the package bin runs it, with the module-load recorder in front. */
const RECORDED_SERVE = ['node', '--import', RECORD_LOADS, BIN, 'serve'];
const tempDir = useTempDir('podhook-tracing-');

/** Spans leave within ~50 ms of ending instead of the batch processor's default 5 s; retries come at once. */
const PROMPT = { OTEL_BSP_SCHEDULE_DELAY: '50', OTEL_TRACES_SAMPLER: 'always_on', RETRY_BASE_MS: '1', RETRY_MAX_MS: '5', DISPATCH_POLL_MS: '20', FIXTURE_LEAKED_KEY: TEST_SECRET };

const running: Array<ServerProcess | OtlpReceiver> = [];
afterEach(async () => {
  for (const r of running.splice(0)) {
    if ('child' in r) {
      if (r.child.exitCode === null && r.child.signalCode === null) {
        r.child.kill('SIGTERM');
        await once(r.child, 'close');
      }
    } else await r.close();
  }
});

async function receiver() {
  const r = await startOtlpReceiver();
  running.push(r);
  return r;
}

async function serve(env: Record<string, string>, options: Parameters<typeof spawnServer>[1] = { handlers: TRACING_REGISTRY }) {
  const server = await spawnServer(env, options);
  running.push(server);
  return server;
}

async function stop(server: ServerProcess): Promise<number> {
  server.child.kill('SIGTERM');
  const [code] = await once(server.child, 'close');
  return code as number;
}

const post = (url: string, d: ReturnType<typeof signDelivery>, headers: Record<string, string> = {}) =>
  fetch(`${url}/webhooks`, { method: 'POST', headers: { ...d.headers, ...headers }, body: d.body });

const now = () => Math.floor(Date.now() / 1000);
const traceparentOf = (s: ReceivedSpan) => `00-${s.traceId}-${s.spanId}-01`;
const storedTraceParent = (path: string, eventId: string) => {
  const db = new Database(path, { readonly: true });
  try {
    return (db.prepare('select trace_parent from deliveries where event_id = ?').get(eventId) as { trace_parent: string | null }).trace_parent;
  } finally {
    db.close();
  }
};
const loaded = (log: string) => (existsSync(log) ? readFileSync(log, 'utf8') : '');

describe('OpenTelemetry traces from podhook serve', () => {
  it('traces one delivery from the door through a failed and a retried handler run, a listen and a replay, linked to its receipt, leaking nothing', { timeout: 60_000 }, async () => {
    const otlp = await receiver();
    const dir = tempDir();
    const path = dbIn(dir);
    const loads = join(dir, 'loads.log');
    const server = await serve(
      { DATABASE_PATH: path, SVC_WEBHOOK_SECRET: TEST_SECRET, ADMIN_TOKEN, OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, MODULE_LOAD_LOG: loads, ...PROMPT },
      { handlers: TRACING_REGISTRY, command: RECORDED_SERVE },
    );

    const bodyMarker = 'body-marker-7d41c9';
    const headerMarker = 'header-marker-2b86e0';
    const d = signDelivery({ t: now(), body: { pod: { id: 'p-1', name: bodyMarker, status: 'provisioning' } } });
    expect((await post(server.url, d, { 'x-request-note': headerMarker })).status).toBe(200);
    // The sender's retry of it (re-signed with a fresh t), and a forgery under another id.
    expect(await (await post(server.url, signDelivery({ t: now(), eventId: d.eventId, body: { pod: { id: 'p-1', name: bodyMarker, status: 'provisioning' } } }))).json()).toMatchObject({ duplicate: true });
    const forged = signDelivery({ t: now(), secret: 'whsec_not_the_configured_one_1234', body: { pod: { name: bodyMarker } } });
    expect((await post(server.url, forged, { 'x-request-note': headerMarker })).status).toBe(401);

    // An attempt's span ends once its outcome is written, after its handler's.
    await vi.waitFor(() => expect(otlp.named(SPAN.dispatch).filter((s) => s.attributes[ATTR.outcome] === 'processed')).toHaveLength(1), { timeout: 15_000, interval: 50 });
    // The three requests' spans may reach the collector in another export than the attempt's.
    await vi.waitFor(() => expect(otlp.named('POST /webhooks')).toHaveLength(3), { timeout: 15_000, interval: 50 });
    const ingest = otlp.named('POST /webhooks');
    const [received, duplicate, refused] = ['new', 'duplicate', 'signature_mismatch'].map((outcome) => ingest.find((s) => s.attributes[ATTR.outcome] === outcome));
    expect(received!.attributes).toMatchObject({
      'http.request.method': 'POST',
      'http.route': '/webhooks',
      'http.response.status_code': 200,
      [ATTR.eventType]: 'pod.created',
      [ATTR.outcome]: 'new',
    });
    expect(received!.kind).toBe(2); // SERVER
    expect(received!.serviceName).toBe('podhook');
    expect(received!.parentSpanId).toBe(''); // a root: the sender's headers never choose the trace
    expect(received!.attributes[ATTR.eventId]).toBe(d.eventId);
    expect(duplicate!.attributes).toMatchObject({ [ATTR.eventId]: d.eventId, 'http.response.status_code': 200 });
    expect(refused!.attributes).toMatchObject({ [ATTR.eventId]: forged.eventId, [ATTR.eventType]: 'pod.created', 'http.response.status_code': 401 });
    expect(ingest).toHaveLength(3);

    // The store commit is the receipt's child; the row keeps the receipt's context.
    const claims = otlp.named(SPAN.claim).filter((s) => s.traceId === received!.traceId);
    expect(claims).toHaveLength(1);
    expect(claims[0]).toMatchObject({ parentSpanId: received!.spanId, attributes: { [ATTR.outcome]: 'new' } });
    expect(storedTraceParent(path, d.eventId)).toBe(traceparentOf(received!));

    // Two attempts, each a root of its own trace linked to the receipt, each with its handler run
    // inside it, and the handler's own instrumented call inside that.
    const attempts = otlp.named(SPAN.dispatch).sort((a, b) => Number(a.attributes[ATTR.attempt]) - Number(b.attributes[ATTR.attempt]));
    expect(attempts.map((a) => [a.attributes[ATTR.attempt], a.attributes[ATTR.outcome]])).toEqual([[1, 'failed'], [2, 'processed']]);
    for (const attempt of attempts) {
      expect(attempt.parentSpanId).toBe('');
      expect(attempt.traceId).not.toBe(received!.traceId);
      expect(attempt.links).toEqual([{ traceId: received!.traceId, spanId: received!.spanId }]);
      expect(attempt.attributes).toMatchObject({ [ATTR.eventId]: d.eventId, [ATTR.eventType]: 'pod.created' });
    }
    const runs = attempts.map((a) => otlp.spans.filter((s) => s.name === SPAN.handler && s.parentSpanId === a.spanId));
    expect(runs.map((r) => r.map((s) => [s.attributes[ATTR.handler], s.attributes[ATTR.attempt], s.attributes[ATTR.outcome]]))).toEqual([
      [['failsOnce', 1, 'failed']],
      [['failsOnce', 2, 'succeeded']],
    ]);
    const [failedRun] = runs[0]!;
    expect(failedRun!.status.code).toBe(2); // ERROR
    expect(failedRun!.events).toEqual([
      { name: 'exception', attributes: { 'exception.type': 'Error', 'exception.message': 'downstream refused the call (key [redacted])' } },
    ]);
    // The handler's own spans come from its handler thread, which exports on its own schedule.
    await vi.waitFor(() => {
      for (const run of runs.flat()) {
        expect(otlp.spans.filter((s) => s.name === DOWNSTREAM_SPAN && s.parentSpanId === run.spanId), 'the handler\'s own call').toHaveLength(1);
      }
    }, { timeout: 15_000, interval: 50 });

    // A developer's `podhook listen` into a database of their own: its attempt links to the same receipt.
    const listen = await runCli(['listen', '--from', server.url, '--since', '1h', '--once', '--handlers', RECORDING_REGISTRY], {
      DATABASE_PATH: dbIn(tempDir()),
      PODHOOK_ADMIN_TOKEN: ADMIN_TOKEN,
      ...PROMPT,
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
    });
    expect(listen.code, listen.stderr).toBe(0);
    const local = otlp.named(SPAN.dispatch).filter((s) => String(s.attributes[ATTR.dispatcher]).startsWith('listen-'));
    expect(local).toMatchObject([{ links: [{ traceId: received!.traceId, spanId: received!.spanId }], attributes: { [ATTR.outcome]: 'processed' } }]);

    expect(await stop(server)).toBe(0);
    expect(loaded(loads)).toMatch(/@opentelemetry\/sdk-trace-node\//);

    // An operator's replay a week later, from the CLI: one more span linked to the same receipt.
    const replay = await runCli(['replay', d.eventId, '--handlers', TRACING_REGISTRY], { DATABASE_PATH: path, SVC_WEBHOOK_SECRET: TEST_SECRET, ...PROMPT, OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url });
    expect(replay.code, replay.stderr).toBe(0);
    const [replayed] = otlp.named(SPAN.replay);
    expect(replayed).toMatchObject({ parentSpanId: '', links: [{ traceId: received!.traceId, spanId: received!.spanId }], attributes: { [ATTR.outcome]: 'succeeded' } });
    expect(otlp.spans.filter((s) => s.name === SPAN.handler && s.parentSpanId === replayed!.spanId)).toHaveLength(1);

    // Every exported byte: no body, header value, signature or secret.
    const exported = otlp.raw.join('\n');
    const signatures = [d.headers['x-svc-signature']!, forged.headers['x-svc-signature']!];
    for (const leak of [bodyMarker, headerMarker, TEST_SECRET, ADMIN_TOKEN, 'whsec_not_the_configured_one_1234', ...signatures, ...signatures.map((s) => s.split('v1=')[1]!)]) {
      expect(exported).not.toContain(leak);
    }
  });

  it('says on an ordered handler\'s span whether its event was stale', async () => {
    const otlp = await receiver();
    const server = await serve(
      { DATABASE_PATH: dbIn(tempDir()), SVC_WEBHOOK_SECRET: TEST_SECRET, OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, ORDER_HOLD_MS: '0', ...PROMPT },
      { handlers: ORDERED_REGISTRY },
    );
    const t = Math.floor(Date.now() / 1000);
    const at = (ms: number) => new Date(Date.UTC(2026, 10, 25, 12) + ms).toISOString();
    const newer = signDelivery({ t, eventType: 'pod.created', body: { pod: { id: 'pod-t' }, occurred_at: at(1000) } });
    const older = signDelivery({ t, eventType: 'pod.created', body: { pod: { id: 'pod-t' }, occurred_at: at(0) } });
    expect((await post(server.url, newer)).status).toBe(200);
    const syncRuns = () => otlp.named(SPAN.handler).filter((s) => s.attributes[ATTR.handler] === 'syncPod');
    await vi.waitFor(() => expect(syncRuns()).toHaveLength(1), { timeout: 15_000, interval: 50 });
    expect((await post(server.url, older)).status).toBe(200);
    await vi.waitFor(() => expect(syncRuns()).toHaveLength(2), { timeout: 15_000, interval: 50 });
    expect(syncRuns().map((s) => s.attributes[ATTR.orderStale])).toEqual([false, true]);
    // An unordered handler's span has no such attribute.
    expect(otlp.named(SPAN.handler).filter((s) => s.attributes[ATTR.handler] === 'notify').every((s) => !(ATTR.orderStale in s.attributes))).toBe(true);
  });

  it('with the variables unset, loads none of the SDK and stores no trace context', async () => {
    const dir = tempDir();
    const path = dbIn(dir);
    const loads = join(dir, 'loads.log');
    const server = await serve({ DATABASE_PATH: path, SVC_WEBHOOK_SECRET: TEST_SECRET, MODULE_LOAD_LOG: loads, ...PROMPT }, { handlers: TRACING_REGISTRY, command: RECORDED_SERVE });
    const d = signDelivery({ t: now() });
    expect((await post(server.url, d)).status).toBe(200);
    await vi.waitFor(() => expect(server.output()).toMatch(/"outcome":"succeeded".*"msg":"handler run"/), { timeout: 15_000, interval: 50 });
    expect(await stop(server)).toBe(0);

    expect(storedTraceParent(path, d.eventId)).toBeNull();
    const modules = loaded(loads);
    expect(modules, 'the recorder sees OpenTelemetry modules').toMatch(/@opentelemetry\/api\//);
    expect(modules).not.toMatch(/@opentelemetry\/(sdk-|exporter-|otlp-|resources|context-async-hooks)/);
    expect(server.output()).not.toContain('tracing on');
  });

  it('with OTEL_TRACES_EXPORTER=none beside an endpoint, sends nothing to it and loads none of the SDK', async () => {
    const otlp = await receiver();
    const dir = tempDir();
    const loads = join(dir, 'loads.log');
    const server = await serve(
      { DATABASE_PATH: dbIn(dir), SVC_WEBHOOK_SECRET: TEST_SECRET, OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_TRACES_EXPORTER: 'none', MODULE_LOAD_LOG: loads, ...PROMPT },
      { handlers: TRACING_REGISTRY, command: RECORDED_SERVE },
    );
    expect((await post(server.url, signDelivery({ t: now() }))).status).toBe(200);
    await vi.waitFor(() => expect(server.output()).toMatch(/"outcome":"succeeded".*"msg":"handler run"/), { timeout: 15_000, interval: 50 });
    expect(await stop(server)).toBe(0); // a started SDK would flush here
    expect(otlp.raw).toEqual([]);
    expect(loaded(loads)).not.toMatch(/@opentelemetry\/sdk-/);
  });

  it('refuses an invalid OpenTelemetry variable at start with exit code 2, naming it', async () => {
    const dir = tempDir();
    const bad = await runCli(['serve'], { DATABASE_PATH: dbIn(dir), OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_TRACES_SAMPLER: 'sometimes' });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('podhook: invalid configuration: OTEL_TRACES_SAMPLER must be one of parentbased_always_on');
  });

  /** A collector on 127.0.0.1 that accepts connections and never answers, holding each one open. */
  async function stalledCollector() {
    const sockets = new Set<Socket>();
    const server = createServer((socket) => {
      sockets.add(socket);
      socket.on('error', () => {});
      socket.on('close', () => sockets.delete(socket));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const r = {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      connections: () => sockets.size,
      close: () => new Promise<void>((resolve) => (sockets.forEach((s) => s.destroy()), server.close(() => resolve()))),
    };
    running.push(r as unknown as OtlpReceiver);
    return r;
  }

  /**
   * The flush timeout of the next two tests (TRACING_FLUSH_TIMEOUT_MS; 5 s by default): the bound
   * they check holds for any value, each export getting four fifths of it at most.
   */
  const FLUSH_MS = 1_500;

  it.each([
    ['never answers', async () => (await stalledCollector()).url],
    ['refuses every connection', async () => `http://127.0.0.1:${await freePort()}`],
  ])('stops within TRACING_FLUSH_TIMEOUT_MS of SIGTERM when the collector %s, with spans still buffered', async (_name, collector) => {
    const endpoint = await collector();
    const dir = tempDir();
    // The batch processor's own 5 s delay: the delivery's spans are still buffered at SIGTERM.
    const server = await serve({ DATABASE_PATH: dbIn(dir), SVC_WEBHOOK_SECRET: TEST_SECRET, OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_TRACES_SAMPLER: 'always_on', TRACING_FLUSH_TIMEOUT_MS: String(FLUSH_MS) });
    expect((await post(server.url, signDelivery({ t: now() }))).status).toBe(200);
    await vi.waitFor(() => expect(server.output()).toMatch(/"outcome":"succeeded".*"msg":"handler run"/), { timeout: 15_000, interval: 50 });
    const started = performance.now();
    expect(await stop(server)).toBe(0);
    const tookMs = performance.now() - started;
    // docs/tracing.md: at most the flush timeout more than the handlers' grace (none run here); the
    // rest is a process start's worth of slack on a shared machine.
    expect(tookMs).toBeLessThan(FLUSH_MS + 1_500);
    expect(server.output()).toContain('tracing: the last spans could not be sent');
    expect(server.output()).toMatch(new RegExp(`"timeout_ms":${FLUSH_MS},.*"msg":"tracing: the last spans could not be sent"`));
  }, 40_000);
});
