import { request as httpRequest } from 'node:http';

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/**
 * A POST over real TCP with full control of framing: `chunks` are written one by one with
 * chunked transfer encoding (no Content-Length), as a streaming sender would.
 */
export function postChunked(url: string, headers: Record<string, string>, chunks: Uint8Array[]): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: 'POST', headers: { ...headers, 'transfer-encoding': 'chunked' } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on('error', (error: NodeJS.ErrnoException) => {
      // The server may answer 413 and close before every chunk is written.
      if (error.code === 'EPIPE' || error.code === 'ECONNRESET') return;
      reject(error);
    });
    for (const chunk of chunks) req.write(chunk);
    req.end();
  });
}
