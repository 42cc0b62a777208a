#!/bin/sh
# `npm run dev:worker`: the Worker in workerd on this machine (`wrangler dev --local`), with a
# local D1 database under .wrangler/state. No Cloudflare login and no network are needed.
#   - applies drizzle/sqlite/ to the local D1 first (wrangler's d1_migrations ledger; a no-op when current)
#   - the signing secret comes from .dev.vars (copy .dev.vars.example)
#   - PORT picks the port (wrangler's default, 8787, otherwise)
#   - --test-scheduled exposes GET /__scheduled?cron=*+*+*+*+* to run the cron handler by hand
set -eu
cd "$(dirname "$0")/.."
export WRANGLER_SEND_METRICS=false CLOUDFLARE_CF_FETCH_ENABLED=false WRANGLER_HIDE_BANNER=true
unset CLOUDFLARE_API_TOKEN || true

if [ ! -f .dev.vars ]; then
  echo "dev:worker: no .dev.vars: deliveries get 503 until SVC_WEBHOOK_SECRET is set (cp .dev.vars.example .dev.vars)" >&2
fi
./node_modules/.bin/wrangler d1 migrations apply DB --local
exec ./node_modules/.bin/wrangler dev --local --test-scheduled ${PORT:+--port "$PORT"} "$@"
