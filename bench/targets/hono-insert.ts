// Bare Hono plus the same HMAC check and one SQLite insert per request (SQLITE_SYNC: NORMAL or
// FULL): the reference points between "limit" and a durable receiver.
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { openEventsTable, verifyPlain } from './_verify.js';

const secret = process.env.SVC_WEBHOOK_SECRET!;
const insertEvent = openEventsTable('NORMAL');

const app = new Hono();
app.post('/webhooks', async (c) => {
  const body = Buffer.from(await c.req.arrayBuffer());
  if (verifyPlain(c.req.header('x-svc-signature'), body, secret) === null) return c.json({ error: { code: 'unauthorized' } }, 401);
  const id = c.req.header('x-svc-event-id')!;
  const inserted = insertEvent(id, c.req.header('x-svc-event-type'), body);
  return c.json({ received: true, event_id: id, duplicate: !inserted });
});
serve({ fetch: app.fetch, port: Number(process.env.PORT), hostname: '127.0.0.1' }, () => console.log('listening'));
