#!/usr/bin/env bash
# The Dockerfile's steps without a Docker engine (CI has none): the same commands, numbered alike
# and in the same order, on a clean copy of HEAD, so what the image does is tested here. Change a
# step in the Dockerfile and change it here. What differs, and why: the machine's Node instead of
# the image's, and HOST=127.0.0.1 on a free port instead of 0.0.0.0:3000 (tests stay on loopback).
#
# Then, as a user of the image would: wait for the HEALTHCHECK to pass, POST a correctly signed
# delivery (200), see its handlers run from dist/, send SIGTERM and expect exit code 0.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/podhook-docker-path.XXXXXX")"
server_pid=""
cleanup() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then kill -KILL "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
started=$SECONDS
step() { printf '[docker-path %4ss] %s\n' "$((SECONDS - started))" "$*"; }
fail() {
  printf 'docker-path: FAILED: %s\n' "$*" >&2
  [ -f "$work/server.log" ] && { echo '--- server log ---' >&2; tail -n 40 "$work/server.log" >&2; }
  exit 1
}

# The build context: the files git has at HEAD (.dockerignore leaves out the same local state).
build="$work/build"
mkdir -p "$build"
git -C "$repo" archive HEAD | tar -x -C "$build"
cd "$build"

step '1. npm ci'
npm ci --no-audit --no-fund --loglevel=error
step '2. npm run build'
npm run build --silent
step '3. npm prune --omit=dev'
npm prune --omit=dev --no-audit --no-fund --loglevel=error
[ ! -e node_modules/typescript ] || fail 'dev dependencies left after the prune'

step '4. the runtime copy (package.json, node_modules, dist, bin, drizzle, the health check)'
app="$work/app"
mkdir -p "$app/scripts" "$work/data"
cp -R package.json node_modules dist bin drizzle "$app/"
cp scripts/healthcheck.mjs "$app/scripts/"
cd "$app"
[ ! -e src ] || fail 'src/ in the runtime copy: bin/podhook.js would not run dist/'

step '5. node bin/podhook.js serve'
secret="whsec_docker_path_$RANDOM$RANDOM"
export NODE_ENV=production NODE_OPTIONS=--max-semi-space-size=4 HOST=127.0.0.1 PORT=0 DATABASE_PATH="$work/data/podhook.db" SVC_WEBHOOK_SECRET="$secret"
node bin/podhook.js serve >"$work/server.log" 2>&1 &
server_pid=$!
url=""
for _ in $(seq 1 150); do
  url="$(sed -n 's/.*"url":"\(http:[^"]*\)".*"msg":"listening".*/\1/p' "$work/server.log" | head -n 1)"
  [ -n "$url" ] && break
  kill -0 "$server_pid" 2>/dev/null || fail 'the server exited before listening'
  sleep 0.2
done
[ -n "$url" ] || fail 'the server did not log "listening" within 30 s'
export PORT="${url##*:}"

step "HEALTHCHECK (node scripts/healthcheck.mjs) on $url"
healthy=""
for _ in $(seq 1 50); do
  if node scripts/healthcheck.mjs; then healthy=1; break; fi
  sleep 0.2
done
[ -n "$healthy" ] || fail 'the health check did not pass within 10 s'

step 'a signed delivery'
answer="$(node "$repo/scripts/send-delivery.mjs" "$url/webhooks" pod.created)" || fail "delivery refused: $answer"
echo "$answer"
event_id="$(echo "$answer" | sed -n 's/.*"event_id":"\([0-9a-f-]*\)".*/\1/p' | head -n 1)"
forged="$(SVC_WEBHOOK_SECRET=not-the-secret node "$repo/scripts/send-delivery.mjs" "$url/webhooks")" && fail "a forged delivery was accepted: $forged"
case "$forged" in *'"status":401'*) ;; *) fail "a forged delivery got: $forged" ;; esac

step 'its handlers ran (podhook deliveries, from dist/)'
processed=""
for _ in $(seq 1 50); do
  if node bin/podhook.js deliveries --json | node -e '
    const rows = JSON.parse(require("node:fs").readFileSync(0, "utf8"));
    process.exit(rows.some((r) => r.event_id === process.argv[1] && r.status === "processed") ? 0 : 1);' "$event_id"; then
    processed=1
    break
  fi
  sleep 0.2
done
[ -n "$processed" ] || fail "delivery $event_id was not processed: $(node bin/podhook.js deliveries 2>&1)"

step 'SIGTERM'
kill -TERM "$server_pid"
code=0
wait "$server_pid" || code=$?
server_pid=""
[ "$code" -eq 0 ] || fail "exit code $code after SIGTERM (expected 0)"
grep -q '"msg":"stopped"' "$work/server.log" || fail 'no "stopped" line after SIGTERM'

step 'docker-path: 1 passed, 0 failed'
