import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach } from 'vitest';

/** One request the fake service received. */
export interface SeenRequest {
  method: string;
  url: string;
  apiKey: string | undefined;
  requestId: string | undefined;
  at: number;
}

export interface FakeService {
  /** `http://127.0.0.1:<port>`. */
  url: string;
  /** Every request, in order of arrival (the effects a test counts). */
  requests: SeenRequest[];
}

/** Answers JSON with a status (and extra headers). */
export const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) =>
  void res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));

/** The spec's error shape. */
export const serviceError = (res: ServerResponse, status: number, code: string, message: string, details?: Record<string, unknown>) =>
  json(res, status, { error: { code, message, ...(details ? { details } : {}) } });

/**
 * Fake services of the pod surface for answers the emulator never gives: real HTTP servers on
 * 127.0.0.1, each answering every request with `respond` (the request and how many came before
 * it), recording each one. Closed after each test.
 */
export function useFakeServices() {
  const servers: ReturnType<typeof createServer>[] = [];
  afterEach(async () => {
    for (const s of servers.splice(0)) await new Promise<void>((r) => (s.close(() => r()), s.closeAllConnections()));
  });
  return async function fakeService(respond: (req: IncomingMessage, res: ServerResponse, n: number) => void): Promise<FakeService> {
    const requests: SeenRequest[] = [];
    const server = createServer((req, res) => {
      const header = (name: string) => (Array.isArray(req.headers[name]) ? req.headers[name][0] : (req.headers[name] as string | undefined));
      requests.push({ method: req.method ?? '', url: req.url ?? '', apiKey: header('x-api-key'), requestId: header('x-request-id'), at: Date.now() });
      respond(req, res, requests.length - 1);
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    servers.push(server);
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests };
  };
}
