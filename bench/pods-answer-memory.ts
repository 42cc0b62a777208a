// The receiver's memory while the pod client reads one large answer (issue 44 item 5): a server
// on 127.0.0.1 answers `GET /pods/v1/pods` with a JSON page of MB megabytes (default 100); the
// client in this process lists it once. Prints the RSS before, the peak (sampled every 5 ms), how
// long the call took and how it ended. Run: npx tsx bench/pods-answer-memory.ts [MB]
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createPodsClient } from '../src/core/pods/pods-client.js';

const mb = Number(process.argv[2] ?? 100);
const pod = JSON.stringify({ id: '5b0c1a7e-7d33-4c55-9a71-2f0e3c4d5e6f', name: 'x'.repeat(900) });
const server = createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  let written = 0;
  res.write('{"next_cursor":null,"pods":[');
  const more = () => {
    while (written < mb * 1024 * 1024 && !res.destroyed) {
      const chunk = Array.from({ length: 64 }, () => pod).join(',');
      written += chunk.length + 1;
      if (!res.write((written > chunk.length + 1 ? ',' : '') + chunk)) return void res.once('drain', more);
    }
    if (!res.destroyed) res.end(']}');
  };
  more();
});
server.listen(0, '127.0.0.1');
await once(server, 'listening');
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
const mib = (n: number) => Math.round(n / 1024 / 1024);
const before = process.memoryUsage().rss;
let peak = before;
const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 5);
const started = performance.now();
const outcome = await createPodsClient({ baseUrl: url, apiKey: 'svc_bench_key_0000' })
  .list()
  .then((page) => `ok: ${page.pods.length} pods`, (e: { code?: string }) => `error: ${e.code}`);
clearInterval(sampler);
console.log(JSON.stringify({ answerMB: mb, rssBeforeMB: mib(before), rssPeakMB: mib(peak), ms: Math.round(performance.now() - started), outcome }));
server.close();
server.closeAllConnections();
