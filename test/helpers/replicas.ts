import { once } from 'node:events';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { expect, vi } from 'vitest';
import type { OrderedRun } from '../fixtures/ordered-handlers.js';
import type { RunLine } from '../fixtures/replica-handlers.js';
import { readJsonLines } from './jsonl.js';
import type { SignedDelivery } from './sign.js';
import { spawnServer, type ServerProcess, type SpawnOptions } from './spawn-podhook.js';

/**
 * Settings for replicas under test: a short LEASE_MS makes the takeover after a SIGKILL quick
 * while leaving room for a loaded machine's pauses between renewals; the replica-handlers
 * fixture's slowest run (SLOW_MS) fits well within HANDLER_TIMEOUT_MS.
 */
export const FAST_LEASES = { DISPATCH_POLL_MS: '100', HANDLER_TIMEOUT_MS: '2000', LEASE_MS: '3000' };
/**
 * FAST_LEASES for tests in which a run again on a live replica fails the test (only a kill may
 * cause one), on a host as starved as two suites at once on 2 cores. HANDLER_TIMEOUT_MS is the
 * default, which no short handler reaches however late its thread gets the CPU (2 s was reached).
 * LEASE_MS is 9 s: a replica gives up a lease that its renewals, a third of it apart, leave a third
 * or less of, so a pause under 3 s costs none (1 s with 3000; 2 s with 6000, which lost leases at a
 * load of 12 to 18), nor does an ingest under 6 s (a handed-off delivery's lease starts before its
 * insert). The takeover after a SIGKILL takes up to LEASE_MS.
 */
export const STARVED_HOST_LEASES = { DISPATCH_POLL_MS: '100', HANDLER_TIMEOUT_MS: '30000', LEASE_MS: '9000' };
/** The replica-handlers fixture's handlers, both of which take pod.created. */
const REPLICA_HANDLERS = ['noteAll', 'noteCreated'];

/** Replicas a test started; `stopAll()` (in afterEach) sends SIGTERM to those still running. */
export function replicaPool() {
  const running: ServerProcess[] = [];
  return {
    async start(env: Record<string, string>, options?: SpawnOptions): Promise<ServerProcess> {
      const server = await spawnServer(env, options);
      running.push(server);
      return server;
    },
    async stopAll() {
      await Promise.all(
        running.splice(0).map(async (s) => {
          if (s.child.exitCode !== null || s.child.signalCode !== null) return;
          s.child.kill('SIGTERM');
          await once(s.child, 'close');
        }),
      );
    },
  };
}

/** `kill -9`; resolves once the process is gone, with that moment (epoch ms). */
export async function killHard(server: ServerProcess): Promise<number> {
  const closed = once(server.child, 'close');
  server.child.kill('SIGKILL');
  await closed;
  return Date.now();
}

export async function waitReady(urls: string[], timeout = 20_000): Promise<void> {
  await vi.waitFor(
    async () => {
      for (const url of urls) expect((await fetch(`${url}/readyz`)).status).toBe(200);
    },
    { timeout, interval: 100 },
  );
}

/** One answer to one POST: `status` 0 when no answer came (connection refused or reset). */
export interface Answer {
  eventId: string;
  url: string;
  status: number;
  duplicate?: boolean;
  sentAt: number;
  answeredAt: number;
}

export async function send(url: string, d: SignedDelivery): Promise<Answer> {
  const sentAt = Date.now();
  try {
    const res = await fetch(`${url}/webhooks`, { method: 'POST', headers: d.headers, body: d.body });
    const body = (await res.json().catch(() => ({}))) as { duplicate?: boolean };
    return { eventId: d.eventId, url, status: res.status, duplicate: body.duplicate, sentAt, answeredAt: Date.now() };
  } catch {
    return { eventId: d.eventId, url, status: 0, sentAt, answeredAt: Date.now() };
  }
}

/** Every delivery row (event id, status) of the database at `url`. */
export async function storedRows(url: string): Promise<{ event_id: string; status: string }[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<{ event_id: string; status: string }>('select event_id, status from deliveries')).rows;
  } finally {
    await client.end();
  }
}

/** Waits until the database holds every one of `ids` and every row it holds is `processed`. */
export async function waitAllProcessed(url: string, ids: Iterable<string>, timeout = 40_000) {
  const wanted = new Set(ids);
  await vi.waitFor(
    async () => {
      const rows = await storedRows(url);
      const stored = new Set(rows.map((r) => r.event_id));
      expect([...wanted].filter((id) => !stored.has(id))).toEqual([]);
      expect(rows.filter((r) => r.status !== 'processed')).toEqual([]);
    },
    { timeout, interval: 250 },
  );
  return storedRows(url);
}

/** The lines the replica-handlers fixture appended under `dir`, every process's file. */
export function readRuns(dir: string): RunLine[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.jsonl'))
    .flatMap((f) => readJsonLines<RunLine>(join(dir, f)));
}

export interface RunInterval {
  handler: string;
  id: string;
  pid: number;
  start: number;
  /** When it ended or was aborted; a run without an end on a killed process ends at its kill; otherwise it is still open (Infinity). */
  end: number;
  completed: boolean;
}

/** Pairs each start with the next end of the same handler, event and process. */
export function runIntervals(lines: RunLine[], killedAt: ReadonlyMap<number, number> = new Map()): RunInterval[] {
  const open = new Map<string, RunLine>();
  const out: RunInterval[] = [];
  for (const line of [...lines].sort((a, b) => a.at - b.at || (a.phase === 'start' ? -1 : 1))) {
    const key = `${line.pid} ${line.handler} ${line.id}`;
    if (line.phase === 'start') {
      open.set(key, line);
      continue;
    }
    const start = open.get(key);
    open.delete(key);
    if (start) out.push({ handler: line.handler, id: line.id, pid: line.pid, start: start.at, end: line.at, completed: line.phase === 'end' });
  }
  for (const s of open.values()) out.push({ handler: s.handler, id: s.id, pid: s.pid, start: s.at, end: killedAt.get(s.pid) ?? Infinity, completed: false });
  return out;
}

/** Runs of one handler on one event by two processes at the same time, described. */
export function overlappingRuns(intervals: RunInterval[]): string[] {
  const byKey = new Map<string, RunInterval[]>();
  for (const r of intervals) {
    const key = `${r.handler} ${r.id}`;
    byKey.set(key, [...(byKey.get(key) ?? []), r]);
  }
  const found: string[] = [];
  for (const [key, runs] of byKey) {
    for (const a of runs) {
      for (const b of runs) {
        if (a.pid < b.pid && a.start < b.end && b.start < a.end) found.push(`${key}: pid ${a.pid} [${a.start}, ${a.end}] and pid ${b.pid} [${b.start}, ${b.end}]`);
      }
    }
  }
  return found;
}

/** `<handler> <event id>` for each stored delivery's handler that no run completed. */
export function missingCompletions(rows: { event_id: string }[], runs: RunInterval[]): string[] {
  const done = new Set(runs.filter((r) => r.completed).map((r) => `${r.handler} ${r.id}`));
  return rows.flatMap(({ event_id }) => REPLICA_HANDLERS.map((h) => `${h} ${event_id}`)).filter((key) => !done.has(key));
}

/** One run of the ordered-handlers fixture, from its `start` line and (once it ended) its `end` line. */
export type RecordedRun = OrderedRun & { completed: boolean };

/**
 * The ordered-handlers fixture's lines in $RECORD_FILE (every process appends to it) as runs of
 * `handler`: each start paired with its end; a run left open on a killed process ends at its kill.
 */
export function recordedRuns(file: string, handler: string, killedAt: ReadonlyMap<number, number> = new Map()): RecordedRun[] {
  const lines = readJsonLines<OrderedRun>(file);
  const key = (l: OrderedRun) => `${l.pid} ${l.handler} ${l.id} ${l.attempt}`;
  const ends = new Map(lines.filter((l) => l.phase === 'end').map((l) => [key(l), l]));
  const starts = new Set(lines.filter((l) => l.phase === 'start').map(key));
  // A handler that records only its end (the fixture's `notify`) ran from `start` to `end` of that line.
  return lines
    .filter((l) => l.handler === handler && (l.phase === 'start' || !starts.has(key(l))))
    .map((s) => {
      const e = ends.get(key(s));
      return { ...s, end: e ? e.end : (killedAt.get(s.pid) ?? Infinity), ok: e?.ok ?? false, completed: e !== undefined };
    });
}
