// The emulator's whole flow (issue 37 §3, §5) with the project's example handler
// (handlers/diagnose-failed-backup.ts, through a fixture registry) on `podhook serve` with handler
// threads: the emulator delivers `pod.backup.failed`, the handler queues `diagnose` once, the
// emulator delivers `pod.action.queued` back and podhook stores it, and after its sleep the
// handler reads `last_result` and logs it; if the output is not there yet it sleeps again, a
// bounded number of times.
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { stepIdempotencyKey } from '../../src/core/steps/index.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/start-emulator.js';
import { DIAGNOSE_FLOW_REGISTRY } from '../fixtures/registry-paths.js';
import { runCli, spawnServer, type ServerProcess } from '../helpers/spawn-podhook.js';
import { dbIn, useTempDir } from '../helpers/temp-dir.js';

const KEY = 'svc_live_key_diagnose_flow_0123';
const HANDLER = 'diagnoseFailedBackup';
const tempDir = useTempDir();
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface LogLine {
  msg: string;
  time: number;
  event_id?: string;
  handler?: string;
  outcome?: string;
  pod_id?: string;
  reads?: number;
  last_result?: { action: string; output: string; written_at: string };
}

/** The emulator (its outputs written `resultDelayMs` after an action), a receiver registered with it, and what each holds. */
async function flow(resultDelayMs: number, wait: string, extraEnv: Record<string, string> = {}) {
  // timeScale: a delivery refused before the receiver reads its stored secret is retried in 60 ms.
  const emu: RunningEmulator = await startEmulator({ apiKey: KEY, allowLocalUrls: true, seedPods: 2, resultDelayMs, timeScale: 0.001 });
  cleanups.push(() => emu.close());
  const db = dbIn(tempDir());
  const env = { DATABASE_PATH: db, SVC_BASE_URL: emu.url, SVC_API_KEY: KEY };
  const serverEnv = { ...env, HANDLER_THREADS: '1', DIAGNOSE_WAIT: wait, DISPATCH_POLL_MS: '100', ...extraEnv };
  const start = async () => {
    const started: ServerProcess = await spawnServer(serverEnv, { handlers: DIAGNOSE_FLOW_REGISTRY });
    cleanups.push(() => started.child.kill('SIGKILL'));
    return started;
  };
  const server = await start();
  // As a team does: the webhook created at the service, its secret stored for the running receiver.
  const registered = await runCli(['register', '--url', `${server.url}/webhooks`, '--allow-local-url'], env);
  expect(registered.code, registered.stderr).toBe(0);
  const podId = emu.emulator.pods.all()[0]!.id;
  const lines = (of: ServerProcess = server) =>
    of
      .output()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as LogLine);
  const rows = (sql: string) => {
    const conn = new Database(db, { readonly: true });
    try {
      return conn.prepare(sql).all() as Record<string, unknown>[];
    } finally {
      conn.close();
    }
  };
  const backupFailed = () => emu.emulator.emit({ type: 'pod.backup.failed', data: { pod: { id: podId, name: 'demo-pod-1', status: 'active' }, backupId: crypto.randomUUID(), error: 'upload_expired' } });
  return { emu, server, start, podId, lines, rows, backupFailed };
}

describe("the emulator's whole flow with the example handler diagnose-failed-backup.ts", () => {
  it('pod.backup.failed → diagnose queued once → pod.action.queued delivered and stored → last_result read after the sleep (again while not there) and logged', async () => {
    const t = await flow(3_000, '1500ms');
    const { id: eventId } = t.backupFailed();

    // The handler's one action, sent with the step's key as its request id.
    await vi.waitFor(() => expect(t.emu.emulator.queuedActions()).toHaveLength(1), { timeout: 15_000, interval: 50 });
    const [queued] = t.emu.emulator.queuedActions();
    expect(queued).toMatchObject({ pod_id: t.podId, action: 'diagnose', request_id: await stepIdempotencyKey(eventId, HANDLER, 'queue diagnose') });
    // The emulator's pod.action.queued came back, signed, and podhook stored and handled it.
    await vi.waitFor(() => expect(t.rows("select status from deliveries where event_type = 'pod.action.queued'")).toEqual([{ status: 'processed' }]), { timeout: 10_000, interval: 50 });
    // Log lines come through the process's stdout, after the row is written.
    await vi.waitFor(() => expect(t.lines().find((l) => l.msg === 'action queued received')).toMatchObject({ pod_id: t.podId, action: 'diagnose' }), { timeout: 5_000, interval: 50 });

    // The output, read after the sleep and logged; read again while it was not there yet.
    await vi.waitFor(() => expect(t.lines().find((l) => l.msg === 'diagnose output')).toBeDefined(), { timeout: 15_000, interval: 100 });
    const output = t.lines().find((l) => l.msg === 'diagnose output')!;
    const written = t.emu.emulator.queuedActions()[0]!.result_at!;
    expect(output).toMatchObject({ event_id: eventId, handler: HANDLER, pod_id: t.podId, last_result: { action: 'diagnose', output: `diagnose of ${t.podId}: emulated output`, written_at: written } });
    expect(output.reads).toBeGreaterThanOrEqual(2);
    expect(output.time).toBeGreaterThanOrEqual(Date.parse(written));
    await vi.waitFor(() => expect(t.rows(`select status, attempts from deliveries where event_id = '${eventId}'`)).toEqual([{ status: 'processed', attempts: 1 }]), { timeout: 5_000 });
    await vi.waitFor(() => expect(t.lines().filter((l) => l.msg === 'handler run' && l.event_id === eventId).at(-1)?.outcome).toBe('succeeded'), { timeout: 5_000, interval: 50 });
    // Each wait parked the run (no attempt counted) and each wake ran it from the top: the one action stays one.
    const runs = t.lines().filter((l) => l.msg === 'handler run' && l.event_id === eventId);
    expect(runs.filter((r) => r.outcome === 'parked')).toHaveLength(output.reads!);
    expect(runs.map((r) => r.outcome).at(-1)).toBe('succeeded');
    expect(t.emu.emulator.queuedActions()).toHaveLength(1);
    // The pod's output read first (to tell an earlier one from this one's), then each read after a sleep.
    expect(t.emu.emulator.bucketCounts().reads.allowed).toBe(1 + output.reads!);

    // A second failed backup of the same pod: the first diagnose's output is there at once, but it
    // is not this one's; the handler logs the output of its own diagnose.
    const second = t.backupFailed();
    await vi.waitFor(() => expect(t.lines().find((l) => l.msg === 'diagnose output' && l.event_id === second.id)).toBeDefined(), { timeout: 20_000, interval: 100 });
    const actions = t.emu.emulator.queuedActions();
    expect(actions.map((a) => a.action)).toEqual(['diagnose', 'diagnose']);
    const again = t.lines().find((l) => l.msg === 'diagnose output' && l.event_id === second.id)!;
    expect(again.last_result!.written_at).toBe(actions[1]!.result_at);
    expect(again.last_result!.written_at).not.toBe(written);
  }, 60_000);

  it('gives up after its last read when the output never comes: one line saying so, the delivery processed, diagnose queued once', async () => {
    const t = await flow(600_000, '200ms');
    const { id: eventId } = t.backupFailed();
    await vi.waitFor(() => expect(t.rows(`select status, attempts from deliveries where event_id = '${eventId}'`)).toEqual([{ status: 'processed', attempts: 1 }]), { timeout: 20_000, interval: 100 });
    const gaveUp = () => t.lines().filter((l) => l.msg === 'no diagnose output after the last read: giving up');
    await vi.waitFor(() => expect(gaveUp()).toEqual([expect.objectContaining({ event_id: eventId, pod_id: t.podId, reads: 4 })]), { timeout: 5_000, interval: 50 });
    expect(t.lines().filter((l) => l.msg === 'diagnose output')).toEqual([]);
    expect(t.emu.emulator.queuedActions()).toHaveLength(1);
    // One read before the action, four after it.
    expect(t.emu.emulator.bucketCounts().reads.allowed).toBe(5);
  }, 60_000);

  it('a run parked when its process dies is woken by another, and a read that fails is retried on the ladder: diagnose stays queued once', async () => {
    const t = await flow(500, '2s', { RETRY_BASE_MS: '200', RETRY_MAX_MS: '200' });
    const { id: eventId } = t.backupFailed();
    const runsOf = (server: ServerProcess) => t.lines(server).filter((l) => l.msg === 'handler run' && l.event_id === eventId);
    // Parked at its sleep, with the action queued and the emulator's pod.action.queued stored.
    await vi.waitFor(() => expect(runsOf(t.server).map((r) => r.outcome)).toEqual(['parked']), { timeout: 15_000, interval: 50 });
    await vi.waitFor(() => expect(t.rows("select status from deliveries where event_type = 'pod.action.queued'")).toEqual([{ status: 'processed' }]), { timeout: 10_000, interval: 50 });
    expect(t.emu.emulator.queuedActions()).toHaveLength(1);
    t.server.child.kill('SIGKILL');
    // The next call to the service (the read after the sleep) answers 500 internal.
    t.emu.emulator.injectFault({ count: 1, status: 500, code: 'internal', message: 'try again' });
    const second = await t.start();

    await vi.waitFor(() => expect(t.lines(second).find((l) => l.msg === 'diagnose output')).toMatchObject({ event_id: eventId, pod_id: t.podId, reads: 1 }), { timeout: 20_000, interval: 100 });
    await vi.waitFor(() => expect(runsOf(second).map((r) => r.outcome)).toEqual(['failed', 'succeeded']), { timeout: 5_000, interval: 50 });
    await vi.waitFor(() => expect(t.rows(`select status, attempts from deliveries where event_id = '${eventId}'`)).toEqual([{ status: 'processed', attempts: 2 }]), { timeout: 5_000 });
    expect(t.emu.emulator.queuedActions()).toHaveLength(1);
    expect(t.lines(second).find((l) => l.msg === 'diagnose output')!.last_result).toMatchObject({ action: 'diagnose', written_at: t.emu.emulator.queuedActions()[0]!.result_at });
  }, 60_000);
});
