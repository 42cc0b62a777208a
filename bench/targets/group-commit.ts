// "group-commit": a lean durable receiver of this design as a user could write it by hand, with none
// of podhook's code: bare node:http, the same HMAC check and window, every request that arrives
// in one event-loop turn inserted in one transaction, one fdatasync of the WAL on the thread pool,
// each answered after it. It shows what the design itself costs on this machine.
//
// GROUP_COMMIT_WORK=podhook does by hand the durable work podhook does for each delivery: its
// schema (every migration of drizzle/sqlite/, in its journal's order: the event-id key, the
// replay index, the queue indexes), the content digest and kept headers, the body decoded and
// parsed, the insert with its lease and claim id, the three log lines (pino, asynchronous writes
// in 4 KiB chunks), and the outcome update fenced by the claim id (with the run's duration and
// replica, as podhook writes them), which joins the next commit. No handler module, no metrics,
// no request ids, no error paths.
// Otherwise (one-table): the one-table store of the other targets, nothing else.
import { createHash } from 'node:crypto';
import { fdatasync, openSync, readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import Database from 'better-sqlite3';
import { pino } from 'pino';
import { verifyPlain } from './_verify.js';

const secret = process.env.SVC_WEBHOOK_SECRET!;
const path = process.env.DATABASE_PATH!;
const podhookWork = process.env.GROUP_COMMIT_WORK === 'podhook';
const LEASE_MS = 35_000;
const OWNER = `group-commit-pid${process.pid}`;
const OUTCOME_DELAY_MS = 10;

const db = new Database(path);
db.pragma('journal_mode = WAL');
db.pragma('synchronous = NORMAL'); // the fdatasync below makes each answered batch durable
const log = pino({ base: { service: 'group-commit' } }, pino.destination({ dest: 1, sync: false, minLength: 4096 }));
const utf8 = new TextDecoder('utf-8', { fatal: true });

interface Pending {
  id: string;
  type: string;
  body: Buffer;
  t: number;
  res: ServerResponse;
  inserted?: boolean;
  claimId?: string;
  durationMs?: number;
  digest?: Buffer;
  headers?: string;
  payload?: { data?: { pod?: { id?: string; status?: string } } };
}

let insert: (p: Pending) => boolean;
let recordOutcome: (p: Pending) => void = () => {};
if (podhookWork) {
  const migrations = new URL('../../drizzle/sqlite/', import.meta.url);
  const journal = JSON.parse(readFileSync(new URL('meta/_journal.json', migrations), 'utf8')) as { entries: { tag: string }[] };
  for (const { tag } of journal.entries) {
    for (const statement of readFileSync(new URL(`${tag}.sql`, migrations), 'utf8').split('--> statement-breakpoint')) {
      db.exec(statement);
    }
  }
  let claims = 0;
  const ins = db.prepare(
    `insert into deliveries (event_id, event_type, signature_t, content_digest, body, headers, received_at, last_received_at,
       status, next_attempt_at, lease_owner, lease_until, claim_id) values (?, ?, ?, ?, ?, ?, ?, ?, 'queued', ?, ?, ?, ?)
     on conflict do nothing`,
  );
  insert = (p) => {
    const now = Date.now();
    p.claimId = `${OWNER}.${(++claims).toString(36)}`;
    return ins.run(p.id, p.type, p.t, p.digest, p.body, p.headers, now, now, now, OWNER, now + LEASE_MS, p.claimId).changes > 0;
  };
  const upd = db.prepare(
    `update deliveries set status = 'processed', attempts = 1, last_error = null, next_attempt_at = null, processed_at = ?,
       duration_ms = ?, ran_by = ?, lease_owner = null, lease_until = null, claim_id = null where event_id = ? and claim_id = ?`,
  );
  recordOutcome = (p) => void upd.run(Date.now(), p.durationMs, OWNER, p.id, p.claimId);
} else {
  db.exec(`create table if not exists events (
    event_id text primary key, event_type text not null, body blob not null, received_at integer not null)`);
  const ins = db.prepare('insert into events (event_id, event_type, body, received_at) values (?, ?, ?, ?) on conflict do nothing');
  insert = (p) => ins.run(p.id, p.type, p.body, Date.now()).changes > 0;
}

let incoming: Pending[] = [];
let finished: Pending[] = [];
let scheduled = false;
let lazyTimer: ReturnType<typeof setTimeout> | undefined;
const commit = db.transaction((batch: Pending[], outcomes: Pending[]) => {
  for (const p of outcomes) recordOutcome(p);
  for (const p of batch) p.inserted = insert(p);
});
let walFd: number | undefined;

function flush() {
  scheduled = false;
  clearTimeout(lazyTimer);
  lazyTimer = undefined;
  const batch = incoming;
  const outcomes = finished;
  incoming = [];
  finished = [];
  try {
    commit(batch, outcomes);
  } catch {
    for (const p of batch) answer(p, 503); // rolled back: nothing of this batch is stored
    return;
  }
  if (batch.length === 0) return; // outcomes alone need no sync (a crash only re-runs handlers)
  walFd ??= openSync(`${path}-wal`, 'r+');
  fdatasync(walFd, (error) => {
    for (const p of batch) answer(p, error ? 503 : 200);
  });
}

function answer(p: Pending, status: number) {
  const body = status === 200 ? `{"received":true,"event_id":"${p.id}","duplicate":${!p.inserted}}` : '{"error":{"code":"store_unavailable"}}';
  p.res.writeHead(status, { 'content-type': 'application/json', 'content-length': body.length });
  p.res.end(body);
  if (!podhookWork || status !== 200) return;
  log.info({ event_id: p.id, event_type: p.type, outcome: p.inserted ? 'accepted' : 'duplicate', status }, 'delivery');
  if (!p.inserted) return;
  setImmediate(() => {
    const started = performance.now();
    const pod = p.payload?.data?.pod;
    log.info({ event_id: p.id, event_type: p.type, handler: 'podStatusChanged', attempt: 1, pod_id: pod?.id, status: pod?.status }, 'pod status changed');
    p.durationMs = Math.round(performance.now() - started);
    log.info({ event_id: p.id, event_type: p.type, handler: 'podStatusChanged', attempt: 1, duration_ms: p.durationMs, outcome: 'succeeded' }, 'handler run');
    finished.push(p);
    lazyTimer ??= setTimeout(flush, OUTCOME_DELAY_MS);
  });
}

function receive(req: IncomingMessage, res: ServerResponse, body: Buffer) {
  const signature = req.headers['x-svc-signature'];
  const header = typeof signature === 'string' ? signature : undefined;
  const t = verifyPlain(header, body, secret);
  if (t === null) {
    res.writeHead(401).end();
    return;
  }
  const p: Pending = { id: String(req.headers['x-svc-event-id']), type: String(req.headers['x-svc-event-type']), body, t, res };
  if (podhookWork) {
    p.digest = createHash('sha256').update(`${t}.`).update(body).digest();
    const kept: Record<string, string | string[] | undefined> = { ...req.headers };
    delete kept['x-svc-signature'];
    p.headers = JSON.stringify(kept);
    p.payload = JSON.parse(utf8.decode(body)) as Pending['payload'];
  }
  incoming.push(p);
  if (!scheduled) {
    scheduled = true;
    setImmediate(flush);
  }
}

createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => receive(req, res, chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)));
}).listen(Number(process.env.PORT), '127.0.0.1', () => console.log('listening'));
