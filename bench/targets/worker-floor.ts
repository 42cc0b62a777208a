// The floor of bench/worker-cpu.ts: bare Hono as a Worker, answering 200 to a POST after reading
// the body, in the same workerd setup as podhook's Worker (the Worker counterpart of limit.ts).
import { Hono } from 'hono';

const app = new Hono();
app.post('/webhooks', async (c) => {
  await c.req.arrayBuffer();
  return c.json({ received: true });
});

export default app;
