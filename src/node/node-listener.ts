import type { IncomingMessage, ServerResponse } from 'node:http';
import { getRequestListener } from '@hono/node-server';
import { InvalidRequestError, PayloadTooLargeError } from '../core/errors.js';
import type { HeaderSource } from '../core/ingest/receive-delivery.js';
import { checkDeclaredLength } from '../http/read-body.js';
import type { IngestHandler, JsonAnswer } from '../http/ingest.js';
import { REQUEST_ID_HEADER, resolveRequestId } from '../http/request-id.js';

export interface NodeListenerOptions {
  /** The Hono app's fetch: every route but ingest. */
  fetch: (request: Request) => Response | Promise<Response>;
  /** The same ingest handler the app mounts on `POST webhookPath`. */
  ingest: IngestHandler;
  webhookPath: string;
}

/**
 * The `node:http` request listener. `POST <webhookPath>` goes straight to the ingest handler
 * over Node's own request and response: no Web `Request`, `Headers` or `Response` is built for
 * the hot route (measured: README, Performance). Everything else, and anything unusual about an
 * ingest request (an absolute URL, a trailing slash), goes through the Hono app, which mounts
 * the same handler, so both paths answer alike.
 */
export function createNodeListener({ fetch, ingest, webhookPath }: NodeListenerOptions) {
  const viaHono = getRequestListener(fetch);
  const withQuery = `${webhookPath}?`;
  return function listener(req: IncomingMessage, res: ServerResponse): void {
    const url = req.url ?? '';
    if (req.method === 'POST' && (url === webhookPath || url.startsWith(withQuery))) {
      const requestId = resolveRequestId(headerValue(req, REQUEST_ID_HEADER));
      ingest({ headers: nodeHeaders(req), requestId, readBody: (max) => readNodeBody(req, max) }).then(
        (answer) => writeJson(res, answer, requestId),
        (error: unknown) => res.destroy(error as Error), // the handler never throws; a broken socket may
      );
      return;
    }
    void viaHono(req, res);
  };
}

/** One header as `Headers.get` gives it: repeated values joined with ", ". */
function joined(value: string | string[]): string {
  return Array.isArray(value) ? value.join(', ') : value;
}

function headerValue(req: IncomingMessage, name: string): string | null {
  const value = req.headers[name];
  return value === undefined ? null : joined(value);
}

/** `Headers`-like access over Node's parsed headers (names already lower-case). */
function nodeHeaders(req: IncomingMessage): HeaderSource {
  return {
    get: (name) => headerValue(req, name.toLowerCase()),
    forEach(callback) {
      for (const name in req.headers) {
        const value = req.headers[name];
        if (value !== undefined) callback(joined(value), name);
      }
    },
  };
}

/**
 * The raw body with a cap: a declared `Content-Length` over the cap is refused before reading;
 * a chunked body is counted as it arrives and abandoned at the cap (the answer closes the
 * connection). The same rules as `readBodyCapped` for Web requests.
 */
export function readNodeBody(req: IncomingMessage, maxBytes: number): Promise<Uint8Array> {
  try {
    checkDeclaredLength(req.headers['content-length'], req.headers['transfer-encoding'] !== undefined, maxBytes);
  } catch (error) {
    return Promise.reject(error as Error);
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.byteLength;
      if (size > maxBytes) {
        req.off('data', onData);
        req.pause();
        reject(new PayloadTooLargeError(maxBytes));
        return;
      }
      chunks.push(chunk);
    };
    req.on('data', onData);
    req.once('end', () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size)));
    // A sender that hangs up mid-body ('aborted' error, or a close before the end): settle, so
    // nothing waits for bytes that never come; nothing is stored.
    const cutOff = () => reject(new InvalidRequestError('The request body was cut off.', 'body_incomplete'));
    req.once('error', cutOff);
    req.once('close', () => {
      if (!req.complete) cutOff();
    });
  });
}

function writeJson(res: ServerResponse, answer: JsonAnswer, requestId: string): void {
  const body = JSON.stringify(answer.body);
  res.writeHead(answer.status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    [REQUEST_ID_HEADER]: requestId,
    ...answer.headers,
  });
  res.end(body);
}
