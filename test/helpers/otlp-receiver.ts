import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One exported span as a test reads it: ids in hex, attributes and event attributes as plain values. */
export interface ReceivedSpan {
  /** The request path it arrived on (replicas of one test export to paths of their own). */
  path: string;
  serviceName: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
  events: Array<{ name: string; attributes: Record<string, unknown> }>;
  links: Array<{ traceId: string; spanId: string }>;
  status: { code?: number };
}

type OtlpValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number };
type OtlpAttributes = Array<{ key: string; value: OtlpValue }> | undefined;

const plain = (attributes: OtlpAttributes): Record<string, unknown> =>
  Object.fromEntries(
    (attributes ?? []).map(({ key, value }) => [key, value.stringValue ?? (value.intValue !== undefined ? Number(value.intValue) : (value.boolValue ?? value.doubleValue))]),
  );

/**
 * An OTLP/HTTP receiver on 127.0.0.1, as an OpenTelemetry Collector listens on 4318: it takes
 * `POST …/v1/traces` in OTLP's JSON encoding (what @opentelemetry/exporter-trace-otlp-http sends),
 * keeps every byte it was sent, and answers 200.
 */
export async function startOtlpReceiver() {
  const raw: string[] = [];
  const spans: ReceivedSpan[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      raw.push(body);
      const path = req.url ?? '';
      const request = JSON.parse(body) as {
        resourceSpans?: Array<{ resource?: { attributes?: OtlpAttributes }; scopeSpans?: Array<{ spans?: Array<Record<string, unknown>> }> }>;
      };
      for (const rs of request.resourceSpans ?? []) {
        const serviceName = String(plain(rs.resource?.attributes)['service.name']);
        for (const ss of rs.scopeSpans ?? []) {
          for (const s of ss.spans ?? []) {
            spans.push({
              path,
              serviceName,
              traceId: s.traceId as string,
              spanId: s.spanId as string,
              parentSpanId: (s.parentSpanId as string | undefined) ?? '',
              name: s.name as string,
              kind: s.kind as number,
              attributes: plain(s.attributes as OtlpAttributes),
              events: ((s.events as Array<{ name: string; attributes: OtlpAttributes }> | undefined) ?? []).map((e) => ({ name: e.name, attributes: plain(e.attributes) })),
              links: ((s.links as Array<{ traceId: string; spanId: string }> | undefined) ?? []).map((l) => ({ traceId: l.traceId, spanId: l.spanId })),
              status: (s.status as { code?: number } | undefined) ?? {},
            });
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    /** The base URL, as OTEL_EXPORTER_OTLP_ENDPOINT takes it (the exporter appends /v1/traces). */
    url: `http://127.0.0.1:${port}`,
    /** Every request body received, as sent. */
    raw,
    spans,
    /** The spans named `name`, in the order they arrived. */
    named: (name: string) => spans.filter((s) => s.name === name),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export type OtlpReceiver = Awaited<ReturnType<typeof startOtlpReceiver>>;
