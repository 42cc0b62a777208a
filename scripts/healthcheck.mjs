#!/usr/bin/env node
// The Docker image's HEALTHCHECK (and scripts/docker-path.sh's): exits 0 when GET /healthz answers
// 200 on this machine's PORT within 4 s, 1 otherwise. Plain Node: the slim image has no curl.
const port = process.env.PORT || '3000';
const host = !process.env.HOST || process.env.HOST === '0.0.0.0' || process.env.HOST === '::' ? '127.0.0.1' : process.env.HOST;
try {
  const res = await fetch(`http://${host.includes(':') ? `[${host}]` : host}:${port}/healthz`, { signal: AbortSignal.timeout(4000) });
  process.exit(res.ok ? 0 : 1);
} catch {
  process.exit(1);
}
