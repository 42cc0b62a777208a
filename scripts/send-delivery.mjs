#!/usr/bin/env node
// Sends one delivery signed as the service signs it (HMAC-SHA256 of "<t>.<raw body>", spec:
// Events), for trying a running receiver by hand and for scripts/docker-path.sh. Plain Node, no
// dependencies, so it runs beside an image that has no dev tools.
//   SVC_WEBHOOK_SECRET=... node scripts/send-delivery.mjs http://127.0.0.1:8787/webhooks [event-type]
// Prints the answer as one JSON line; exits 0 on a 200, 1 otherwise.
import { createHmac, randomUUID } from 'node:crypto';

const [url, eventType = 'pod.created'] = process.argv.slice(2);
const secret = (process.env.SVC_WEBHOOK_SECRET ?? '').split(',')[0]?.trim();
if (!url || !secret) {
  console.error('usage: SVC_WEBHOOK_SECRET=<secret> node scripts/send-delivery.mjs <url> [event-type]');
  process.exit(2);
}

const eventId = randomUUID();
const body = JSON.stringify({ pod: { id: randomUUID(), name: 'demo', status: 'provisioning' } });
const t = Math.floor(Date.now() / 1000);
const v1 = createHmac('sha256', secret).update(`${t}.${body}`).digest('hex');
const res = await fetch(url, {
  method: 'POST',
  body,
  headers: {
    'content-type': 'application/json',
    'x-svc-signature': `t=${t},v1=${v1}`,
    'x-svc-event-type': eventType,
    'x-svc-event-id': eventId,
  },
});
console.log(JSON.stringify({ status: res.status, event_id: eventId, body: await res.text() }));
process.exit(res.status === 200 ? 0 : 1);
