// "limit": bare Hono on @hono/node-server answering 200 after reading the body.
import { serve } from '@hono/node-server';
import { Hono } from 'hono';

const app = new Hono();
app.post('/webhooks', async (c) => {
  await c.req.arrayBuffer();
  return c.json({ received: true });
});
serve({ fetch: app.fetch, port: Number(process.env.PORT), hostname: '127.0.0.1' }, () => console.log('listening'));
