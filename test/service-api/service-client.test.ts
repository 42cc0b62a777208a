import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createServiceClient, type ServiceClientOptions } from '../../src/service-api/service-client.js';
import { ServiceError } from '../../src/service-api/service-error.js';

const servers: ReturnType<typeof createServer>[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
});

/** A real HTTP server answering every request with `respond` (for answers the emulator never gives). */
async function answering(respond: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
  const server = createServer(respond);
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
}

const reject = async (baseUrl: string, options: Partial<ServiceClientOptions> = {}) => {
  const error = await createServiceClient({ baseUrl, apiKey: 'k', ...options })
    .createWebhook({ url: 'https://hooks.example.com/' })
    .catch((e: unknown) => e);
  expect(error).toBeInstanceOf(ServiceError);
  return error as ServiceError;
};

describe('the service client', () => {
  it('posts to {base_url}/pods/v1/webhooks whatever the trailing slash', async () => {
    let path = '';
    const base = await answering((req, res) => {
      path = req.url!;
      res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify({ webhook: { id: 'w1', url: 'u', enabled: true, secret: 's' } }));
    });
    const webhook = await createServiceClient({ baseUrl: `${base}//`, apiKey: 'k' }).createWebhook({ url: 'https://hooks.example.com/' });
    expect(path).toBe('/pods/v1/webhooks');
    expect(webhook).toMatchObject({ id: 'w1', secret: 's' });
  });

  it('turns an answer without the error shape (a proxy page) into unexpected_response, with the request id it got', async () => {
    const base = await answering((_req, res) => res.writeHead(502, { 'x-request-id': 'edge-proxy-77' }).end('<html>Bad gateway</html>'));
    const error = await reject(base);
    expect(error).toMatchObject({ code: 'unexpected_response', status: 502, requestId: 'edge-proxy-77' });
    expect(error.message).toBe('the service answered HTTP 502 without its error shape');
  });

  it('refuses a success that carries no secret, naming the webhook that was created', async () => {
    const base = await answering((_req, res) => res.writeHead(201).end(JSON.stringify({ webhook: { id: 'w-no-secret', url: 'u', enabled: true } })));
    const error = await reject(base);
    expect(error.code).toBe('unexpected_response');
    expect(error.message).toContain('created webhook w-no-secret but its answer carries no secret');
  });

  it('reports a timeout as network_error', async () => {
    const base = await answering(() => {}); // never answers
    const error = await reject(base, { timeoutMs: 200 });
    expect(error).toMatchObject({ code: 'network_error', status: 0 });
    expect(error.message).toContain('no answer within 0.2 s');
  });
});
