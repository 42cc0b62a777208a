import type { PodhookApp } from './http/create-app.js';

/**
 * Your team's own Hono middleware and routes. podhook calls this on its app before adding its
 * own routes, on the Node server and in the Worker alike, so middleware added here also runs
 * for `POST /webhooks`. `c.get('requestId')` is the request's id. A middleware that reads the
 * body should use `c.req.arrayBuffer()`: the ingest route then verifies those same bytes.
 */
export function customizeApp(app: PodhookApp): void {
  // Example: a header on every answer, and a route of your own.
  // app.use(async (c, next) => {
  //   await next();
  //   c.header('x-served-by', 'podhook');
  // });
  // app.get('/hello', (c) => c.text('hello'));
}
