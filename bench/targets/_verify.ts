import Database from 'better-sqlite3';
import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * The check a user would hand-write next to Express or bare Hono: parse `t` and `v1`, HMAC the
 * raw body, compare in constant time, enforce the 300 s window. Used by the comparison targets.
 * Returns the signed timestamp `t`, or null when the delivery is refused.
 */
export function verifyPlain(header: string | undefined, body: Buffer, secret: string): number | null {
  if (!header) return null;
  let t: string | undefined;
  const sigs: string[] = [];
  for (const part of header.split(',')) {
    const [k, v] = part.split('=');
    if (k === 't') t = v;
    else if (k === 'v1' && v) sigs.push(v);
  }
  if (!t || !/^\d+$/.test(t) || sigs.length === 0) return null;
  const expected = createHmac('sha256', secret).update(`${t}.`).update(body).digest();
  const ok = sigs.some((s) => s.length === 64 && timingSafeEqual(Buffer.from(s, 'hex'), expected));
  return ok && Math.abs(Math.floor(Date.now() / 1000) - Number(t)) <= 300 ? Number(t) : null;
}

/**
 * The one-table store such a user would write: WAL, the given `synchronous` (SQLITE_SYNC
 * overrides it), one prepared insert per request. Returns whether the id was new.
 */
export function openEventsTable(defaultSync: 'FULL' | 'NORMAL') {
  const db = new Database(process.env.DATABASE_PATH!);
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${process.env.SQLITE_SYNC ?? defaultSync}`);
  db.exec(`create table if not exists events (
    event_id text primary key, event_type text not null, body blob not null, received_at integer not null)`);
  const insert = db.prepare('insert into events (event_id, event_type, body, received_at) values (?, ?, ?, ?) on conflict do nothing');
  return (id: string, type: string | undefined, body: Buffer) => insert.run(id, type, body, Date.now()).changes > 0;
}
