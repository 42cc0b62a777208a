// The bench's OTLP/HTTP collector stand-in for the tracing targets: takes every POST (the
// exporter's JSON batches), discards it and answers 200 at once, counting requests, bytes and the
// ingest spans in them per target (the first segment of the path each target exports to), by a
// byte search, not a JSON parse: it shares core 1 with the load client. `GET /` answers the counts.
import { createServer } from 'node:http';

const INGEST_SPAN = Buffer.from('"POST /webhooks"');
const stats: Record<string, { requests: number; bytes: number; ingest_spans: number }> = {};

createServer((req, res) => {
  if (req.method === 'GET') {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(stats));
    return;
  }
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    const s = (stats[(req.url ?? '/').split('/')[1] ?? ''] ??= { requests: 0, bytes: 0, ingest_spans: 0 });
    s.requests++;
    s.bytes += body.length;
    for (let at = body.indexOf(INGEST_SPAN); at >= 0; at = body.indexOf(INGEST_SPAN, at + INGEST_SPAN.length)) s.ingest_spans++;
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
}).listen(Number(process.env.PORT), '127.0.0.1', () => console.log('listening'));
