#!/usr/bin/env node
// The hostile probe of issue 17 at full size, on loopback only, bounded in time and count:
// starts `podhook serve` on a fresh database (admin on), then (0) a 200 MiB form body POSTed to
// `/_podhook/login` without any credential, streamed and then declared, (1) 4,000 sockets each
// sending an unfinished 256 KiB body behind headers that pass every pre-body check, (2) 21,000
// sockets trickling headers. Throughout, one valid signed delivery every 50 ms. Prints the
// server's peak RSS and how the valid deliveries were answered. Needs `ulimit -n` above 22,000
// for phase 2 (it opens fewer sockets when the limit is lower, and says so).
//   node scripts/probe-hostile.mjs [--phase-seconds 20] [--only-login-body]
import { spawn } from 'node:child_process';
import { createHmac, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const phaseFlag = process.argv.indexOf('--phase-seconds');
const PHASE_MS = (phaseFlag === -1 ? 20 : Number(process.argv[phaseFlag + 1])) * 1000;
const SECRET = 'whsec_probe_5b2f9c1d7e3a4086';
const BODY_SOCKETS = 4000;
const TRICKLERS = 21000;
const ONLY_LOGIN_BODY = process.argv.includes('--only-login-body');
const LOGIN_BODY_BYTES = 200 * 1024 * 1024;
const HARD_STOP = setTimeout(() => finish('hard time limit reached'), 4 * PHASE_MS + 60_000);

const dir = mkdtempSync(join(tmpdir(), 'podhook-probe-'));
const child = spawn(process.execPath, [new URL('../bin/podhook.js', import.meta.url).pathname, 'serve'], {
  env: { PATH: process.env.PATH, HOME: process.env.HOME, HOST: '127.0.0.1', PORT: '0', DATABASE_PATH: join(dir, 'probe.db'), SVC_WEBHOOK_SECRET: SECRET, LOG_LEVEL: 'info', ADMIN_TOKEN: `adm_${randomUUID()}` },
  stdio: ['ignore', 'pipe', 'pipe'],
});
let serverOut = '';
let errorLines = 0;
let port;
const onOutput = (chunk) => {
  const text = String(chunk);
  errorLines += text.split('\n').filter((l) => /"level":(50|60)/.test(l)).length;
  if (port === undefined) serverOut += text;
};
child.stdout.on('data', onOutput);
child.stderr.on('data', onOutput);
port = await new Promise((resolve, reject) => {
  const timer = setInterval(() => {
    const m = /"url":"http:\/\/127\.0\.0\.1:(\d+)"/.exec(serverOut);
    if (m) {
      clearInterval(timer);
      resolve(Number(m[1]));
    }
  }, 50);
  child.once('exit', (code) => reject(new Error(`server exited ${code}: ${serverOut}`)));
  setTimeout(() => reject(new Error(`no listening line: ${serverOut}`)), 20_000).unref();
});
serverOut = '';

const statusMb = (field) => {
  try {
    return Number(new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))[1]) / 1024;
  } catch {
    return 0;
  }
};
const rssMb = () => statusMb('VmRSS');
let peak = rssMb();
const baseline = peak;
const sampler = setInterval(() => (peak = Math.max(peak, rssMb())), 100);

const sign = (body, t = Math.floor(Date.now() / 1000)) => ({
  'x-svc-event-id': randomUUID(),
  'x-svc-event-type': 'pod.created',
  'x-svc-signature': `t=${t},v1=${createHmac('sha256', SECRET).update(`${t}.`).update(body).digest('hex')}`,
  'content-type': 'application/json',
});

/** One valid delivery every 50 ms; tallies how each was answered and how long it took. */
function validTraffic() {
  const tally = new Map();
  const latencies = [];
  let stop = false;
  const loop = async () => {
    while (!stop) {
      const body = JSON.stringify({ pod: { id: randomUUID(), name: 'probe' } });
      const started = performance.now();
      let label;
      try {
        const res = await fetch(`http://127.0.0.1:${port}/webhooks`, { method: 'POST', headers: sign(body), body, signal: AbortSignal.timeout(10_000) });
        await res.arrayBuffer();
        label = String(res.status);
      } catch (error) {
        label = `no answer (${error.cause?.code ?? error.name})`;
      }
      latencies.push(performance.now() - started);
      tally.set(label, (tally.get(label) ?? 0) + 1);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const done = loop();
  return async () => {
    stop = true;
    await done;
    latencies.sort((a, b) => a - b);
    return { answers: Object.fromEntries(tally), p50_ms: Math.round(latencies[Math.floor(latencies.length / 2)] ?? 0), p99_ms: Math.round(latencies[Math.floor(latencies.length * 0.99)] ?? 0) };
  };
}

const sockets = new Set();
function openSocket(onConnect) {
  const s = connect(port, '127.0.0.1');
  sockets.add(s);
  s.on('error', () => undefined);
  s.on('close', () => sockets.delete(s));
  s.on('connect', () => onConnect(s));
  return s;
}
const closeAll = () => {
  for (const s of sockets) s.destroy();
  sockets.clear();
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const results = { baseline_rss_mb: Math.round(baseline) };

/**
 * Phase 0: 200 MiB of form body to the login route, no credential: streamed (chunked) until the
 * server answers or hangs up, then declared in Content-Length. Reports the answers, what the
 * client got to write, and the kernel's own peak RSS of the server (VmHWM: no sample missed).
 */
{
  const stopValid = validTraffic();
  const host = `127.0.0.1:${port}`;
  const streamed = await new Promise((resolve) => {
    const s = openSocket(async () => {
      s.write(`POST /_podhook/login HTTP/1.1\r\nhost: ${host}\r\norigin: http://${host}\r\ncontent-type: application/x-www-form-urlencoded\r\ntransfer-encoding: chunked\r\n\r\n`);
      const chunk = Buffer.concat([Buffer.from('10000\r\n'), Buffer.alloc(0x10000, 0x61), Buffer.from('\r\n')]);
      let written = 0;
      let answer = '';
      s.on('data', (c) => (answer += c));
      while (written < LOGIN_BODY_BYTES && !s.destroyed && answer === '') {
        written += 0x10000;
        if (!s.write(chunk)) {
          await new Promise((r) => {
            const on = () => (['drain', 'close', 'data'].forEach((e) => s.off(e, on)), r());
            ['drain', 'close', 'data'].forEach((e) => s.once(e, on));
          });
        }
      }
      if (!s.destroyed && answer === '') s.write('0\r\n\r\n');
      const deadline = Date.now() + 60_000;
      while (answer === '' && !s.destroyed && Date.now() < deadline) await sleep(20);
      s.destroy();
      resolve({ status: /^HTTP\/1\.1 (\d+)/.exec(answer)?.[1] ?? 'no answer', client_wrote_mb: Math.round(written / 1048576) });
    });
  });
  const declared = await new Promise((resolve) => {
    const s = openSocket(() => {
      let answer = '';
      s.on('data', (c) => (answer += c));
      s.on('close', () => resolve(/^HTTP\/1\.1 (\d+)/.exec(answer)?.[1] ?? 'no answer'));
      s.write(`POST /_podhook/login HTTP/1.1\r\nhost: ${host}\r\norigin: http://${host}\r\ncontent-type: application/x-www-form-urlencoded\r\ncontent-length: ${LOGIN_BODY_BYTES}\r\n\r\n`);
      const chunk = Buffer.alloc(1024 * 1024, 0x61);
      const pump = () => {
        while (!s.destroyed && s.write(chunk));
      };
      s.on('drain', pump);
      pump();
      setTimeout(() => s.destroy(), 60_000).unref();
    });
  });
  results.phase0_unauthenticated_login_body = {
    body_mb: LOGIN_BODY_BYTES / 1048576,
    streamed,
    declared: { status: declared },
    peak_rss_mb: Math.round(statusMb('VmHWM')),
    valid: await stopValid(),
  };
  peak = Math.max(peak, statusMb('VmHWM'));
  if (ONLY_LOGIN_BODY) {
    finish();
    await new Promise(() => {}); // finish() exits once the server has stopped
  }
  await sleep(1000);
}

// Phase 1: unfinished 256 KiB bodies behind headers with a current t (a forged v1 passes every
// check made before the body: only the MAC needs the body).
{
  const stopValid = validTraffic();
  const chunk = Buffer.alloc(255 * 1024, 0x61);
  const head = (i) =>
    `POST /webhooks HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 262144\r\n` +
    `x-svc-event-id: ${randomUUID()}\r\nx-svc-event-type: pod.created\r\nx-svc-signature: t=${Math.floor(Date.now() / 1000)},v1=${'ab'.repeat(32)}\r\n\r\n`;
  for (let i = 0; i < BODY_SOCKETS; i++) {
    openSocket((s) => {
      s.write(head(i));
      s.write(chunk);
    });
    if (i % 200 === 199) await sleep(20);
  }
  await sleep(PHASE_MS);
  const peakPhase = peak;
  closeAll();
  results.phase1_unfinished_bodies = { sockets: BODY_SOCKETS, peak_rss_mb: Math.round(peakPhase), valid: await stopValid() };
  await sleep(2000);
}

// Phase 2: header tricklers, one byte a second each.
{
  let limit = TRICKLERS;
  try {
    const soft = Number(/Max open files\s+(\d+)/.exec(readFileSync('/proc/self/limits', 'utf8'))[1]);
    if (soft < TRICKLERS + 1000) limit = Math.max(0, soft - 1000);
  } catch {}
  const stopValid = validTraffic();
  const line = 'POST /webhooks HTTP/1.1\r\nhost: x\r\nx-slow: ';
  for (let i = 0; i < limit; i++) {
    openSocket((s) => {
      let at = 0;
      const drip = setInterval(() => {
        if (s.destroyed) return clearInterval(drip);
        s.write(line[at++ % line.length]);
      }, 1000);
      s.on('close', () => clearInterval(drip));
    });
    if (i % 500 === 499) await sleep(20);
  }
  await sleep(PHASE_MS);
  const open = sockets.size;
  closeAll();
  results.phase2_header_tricklers = { sockets: limit, still_open_at_end: open, peak_rss_mb: Math.round(peak), valid: await stopValid() };
}

finish();

function finish(reason) {
  clearTimeout(HARD_STOP);
  clearInterval(sampler);
  closeAll();
  results.peak_rss_mb = Math.round(peak);
  results.server_error_lines = errorLines;
  if (reason) results.stopped = reason;
  console.log(JSON.stringify(results, null, 2));
  child.kill('SIGTERM');
  child.once('exit', () => {
    rmSync(dir, { recursive: true, force: true });
    process.exit(0);
  });
  setTimeout(() => child.kill('SIGKILL'), 15_000).unref();
}
