import type { IncomingMessage } from 'node:http';
import { getRequestListener, type HttpBindings } from '@hono/node-server';
import type { Context } from 'hono';
import { InvalidRequestError, PayloadTooLargeError } from '../core/errors.js';
import type { HeaderSource } from '../core/ingest/receive-delivery.js';
import { bodyReadByMiddleware, webIngestSource, type IngestSource, type PodhookApp } from '../http/create-app.js';
import { budgetSpentError, type BodyBudget } from '../http/body-budget.js';
import { checkDeclaredLength } from '../http/read-body.js';

/**
 * The `node:http` request listener: every request, ingest included, goes through the Hono app
 * (so a team's middleware wraps ingest too), served by @hono/node-server, whose lightweight
 * `Request` and `Response` build no Web objects unless something asks for them.
 */
export function createNodeListener(app: PodhookApp) {
  return getRequestListener(app.fetch);
}

/**
 * The ingest route's source on Node: Node's own request from @hono/node-server's bindings
 * (headers as parsed, the body without a Web stream), read under the shared body budget.
 * `app.request` in tests has no Node request: the Web one is read then.
 */
export function createNodeIngestSource(budget?: BodyBudget) {
  return function nodeIngestSource(c: Context): IngestSource {
    const incoming = (c.env as Partial<HttpBindings> | undefined)?.incoming;
    if (!incoming) return webIngestSource(c);
    if (incoming.readableDidRead) return bodyReadByMiddleware(c);
    return { headers: nodeHeaders(incoming), readBody: (max) => readNodeBody(incoming, max, budget) };
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
 * connection). The same rules as `readBodyCapped` for Web requests. With a budget, the bytes
 * being read count against it until the read settles: beyond it, 503.
 */
export function readNodeBody(req: IncomingMessage, maxBytes: number, budget?: BodyBudget): Promise<Uint8Array> {
  try {
    const declared = checkDeclaredLength(req.headers['content-length'], req.headers['transfer-encoding'] !== undefined, maxBytes);
    if (declared && budget && Number(req.headers['content-length']) > budget.available()) throw budgetSpentError();
  } catch (error) {
    return Promise.reject(error as Error);
  }
  return new Promise((resolveRead, rejectRead) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let held = 0;
    const settle = () => {
      budget?.give(held);
      held = 0;
      req.off('data', onData);
    };
    const resolve = (body: Uint8Array) => (settle(), resolveRead(body));
    const reject = (error: Error) => (settle(), req.pause(), rejectRead(error));
    const onData = (chunk: Buffer) => {
      size += chunk.byteLength;
      if (size > maxBytes) return reject(new PayloadTooLargeError(maxBytes));
      if (budget) {
        if (!budget.take(chunk.byteLength)) return reject(budgetSpentError());
        held += chunk.byteLength;
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
