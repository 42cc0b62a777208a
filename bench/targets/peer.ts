// "peer": what a user would write instead of podhook: Express 5 with a raw-body parser, the same
// HMAC check and window, and one SQLite insert per request with synchronous=FULL (a durable ack).
// SQLITE_SYNC=NORMAL gives the non-durable variant for comparison.
import express from 'express';
import { openEventsTable, verifyPlain } from './_verify.js';

const secret = process.env.SVC_WEBHOOK_SECRET!;
const insertEvent = openEventsTable('FULL');

const app = express();
app.post('/webhooks', express.raw({ type: '*/*', limit: '256kb' }), (req, res) => {
  const body = req.body as Buffer;
  if (verifyPlain(req.get('x-svc-signature'), body, secret) === null) {
    res.status(401).json({ error: { code: 'unauthorized', message: 'bad signature' } });
    return;
  }
  const id = req.get('x-svc-event-id')!;
  const inserted = insertEvent(id, req.get('x-svc-event-type'), body);
  res.json({ received: true, event_id: id, duplicate: !inserted });
});
app.listen(Number(process.env.PORT), '127.0.0.1', () => console.log('listening'));
