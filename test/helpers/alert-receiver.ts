import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** The alert URL's path stands for a token (as in a Slack webhook URL): it must never be logged. */
export const URL_TOKEN = 'T0ALERTS/B0PATH/urltoken7c1d';

export interface ReceivedAlert {
  text: string;
  podhook: Record<string, unknown> & { kind: string };
}

/** A local alert receiver on 127.0.0.1 that keeps every POST it gets. */
export async function startAlertReceiver() {
  const raw: string[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      raw.push(body);
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/${URL_TOKEN}`,
    raw,
    alerts: () => raw.map((r) => JSON.parse(r) as ReceivedAlert),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export type AlertReceiver = Awaited<ReturnType<typeof startAlertReceiver>>;
