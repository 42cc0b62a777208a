/**
 * `podhook schemas` over many deliveries: peak RSS and wall time, reading a SQLite store and an
 * export file, at two sizes (memory should not grow with the count). Not a test: run by hand.
 *
 *   node --import tsx bench/schemas-memory.ts [COUNT]      (default 100000; also COUNT / 10)
 *
 * The deliveries are the 11 default payloads with variation (statuses, optional and nullable
 * fields, numbers with and without a fraction), written as an export file, then imported with
 * `podhook import` into a fresh SQLite file. Each run is `/usr/bin/time` around `node bin/podhook.js`.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultPayload } from '../src/core/events/default-payloads.js';
import { EVENT_TYPES } from '../src/core/events/event-types.js';
import { exportLine } from '../src/core/transfer/delivery-export.js';
import { ROOT } from './harness.js';

const COUNT = Number(process.argv[2] ?? 100_000);
const BIN = join(ROOT, 'bin/podhook.js');
const T0 = Date.parse('2026-05-01T00:00:00Z');
const STATUSES = ['active', 'provisioning', 'suspended', 'destroyed'];

/** A small deterministic PRNG (mulberry32), so two runs write the same variation. */
function random(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function writeExport(path: string, count: number): void {
  const next = random(26);
  const encoder = new TextEncoder();
  let chunk = '';
  writeFileSync(path, '');
  for (let i = 0; i < count; i++) {
    const type = EVENT_TYPES[i % EVENT_TYPES.length]!;
    const at = T0 + i * 1000;
    const payload = defaultPayload(type, { now: at }) as Record<string, unknown> & { pod: Record<string, unknown> };
    payload.pod.status = STATUSES[Math.floor(next() * STATUSES.length)];
    payload.pod.name = `pod-${Math.floor(next() * 5000)}`;
    if (next() < 0.3) payload.note = `note ${i}`;
    payload.load = next() < 0.5 ? Math.floor(next() * 100) : next() * 100;
    payload.region = next() < 0.1 ? null : 'eu-1';
    const body = encoder.encode(JSON.stringify(payload));
    chunk += exportLine({ eventId: crypto.randomUUID(), eventType: type, signatureT: 1_777_593_600 + i, body, headers: { 'content-type': 'application/json' }, receivedAt: at, lastReceivedAt: at, deliveryCount: 1, status: 'processed', attempts: 1, lastError: null, nextAttemptAt: null, processedAt: at });
    if (i % 1000 === 999) {
      writeFileSync(path, chunk, { flag: 'a' });
      chunk = '';
    }
  }
  writeFileSync(path, chunk, { flag: 'a' });
}

/** Peak RSS (MB) and wall time (s) of `podhook <args>`. */
function measure(args: string[], env: Record<string, string>): { rssMb: number; seconds: number; stderr: string } {
  const run = spawnSync('/usr/bin/time', ['-f', 'TIME %M %e', process.execPath, BIN, ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    encoding: 'utf8',
  });
  if (run.status !== 0) throw new Error(`podhook ${args.join(' ')} exited ${run.status}: ${run.stderr.slice(-2000)}`);
  const [, kb, seconds] = /TIME (\d+) ([\d.]+)/.exec(run.stderr)!;
  return { rssMb: Math.round(Number(kb) / 1024), seconds: Number(seconds), stderr: run.stderr.replace(/TIME .*\n?/, '').trim() };
}

const dir = mkdtempSync(join(tmpdir(), 'podhook-schemas-bench-'));
try {
  const rows: string[] = [];
  const empty = join(dir, 'empty.jsonl');
  writeFileSync(empty, '');
  const baseline = measure(['schemas', '--from', empty, '--json'], {});
  rows.push(`${'0'.padStart(7)}  ${'baseline'.padEnd(18)} ${String(baseline.rssMb).padStart(5)} MB  ${baseline.seconds.toFixed(1).padStart(6)} s   (starting the CLI from the TypeScript sources)`);
  for (const count of [Math.round(COUNT / 10), COUNT]) {
    const file = join(dir, `deliveries-${count}.jsonl`);
    const database = join(dir, `podhook-${count}.db`);
    const out = join(dir, `_payloads-${count}.ts`);
    writeExport(file, count);
    const imported = spawnSync(process.execPath, [BIN, 'import', file], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', DATABASE_PATH: database }, encoding: 'utf8' });
    if (imported.status !== 0) throw new Error(`import: ${imported.stderr}`);
    const mb = (bytes: number) => `${Math.round(bytes / 1024 / 1024)} MB`;
    const runs = [
      ['store', ['schemas', '--out', out], { DATABASE_PATH: database }],
      // The same with V8's heap capped: it completes, so what it keeps does not grow with the count.
      ['store, 48 MB heap', ['schemas', '--out', out], { DATABASE_PATH: database, NODE_OPTIONS: '--max-old-space-size=48' }],
      ['store --check', ['schemas', '--out', out, '--check'], { DATABASE_PATH: database }],
      ['--from file', ['schemas', '--from', file, '--out', out], {}],
    ] as const;
    for (const [label, args, env] of runs) {
      const { rssMb, seconds, stderr } = measure([...args], env);
      rows.push(`${String(count).padStart(7)}  ${label.padEnd(18)} ${String(rssMb).padStart(5)} MB  ${seconds.toFixed(1).padStart(6)} s   (export ${mb(statSync(file).size)}, database ${mb(statSync(database).size)}; ${stderr.split('\n')[0]})`);
    }
  }
  console.log(`  count  run                 peak RSS    wall`);
  console.log(rows.join('\n'));
} finally {
  rmSync(dir, { recursive: true, force: true });
}
