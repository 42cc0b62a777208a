// Runs in Node before the workerd tests: a real HTTP receiver on 127.0.0.1 for the Worker's
// alerts. It keeps every POST by path; `GET /received/<path>` answers what that path got.
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    alertReceiverUrl: string;
  }
}

export default async function setup(project: TestProject) {
  const received = new Map<string, string[]>();
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const path = req.url ?? '/';
      if (req.method === 'GET' && path.startsWith('/received/')) {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(received.get(path.slice('/received'.length)) ?? []));
        return;
      }
      received.set(path, [...(received.get(path) ?? []), body]);
      res.writeHead(200).end('ok');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  project.provide('alertReceiverUrl', `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  return () => new Promise<void>((resolve) => server.close(() => resolve()));
}
