# syntax=docker/dockerfile:1
# podhook's Node service on SQLite as an image (README: "Deploy: Docker").
#
# No Docker engine runs in CI, so scripts/docker-path.sh runs these same steps, numbered alike
# and in the same order, on a clean copy of the repository (npm ci, build, prune, the runtime
# copy, `node bin/podhook.js serve`, the health check, a signed delivery, SIGTERM): change a
# step here and change it there.
#
#   docker build -t podhook .
#   docker run -d --name podhook -p 3000:3000 -v podhook-data:/data \
#     -e SVC_WEBHOOK_SECRET=whsec_... --stop-timeout 20 podhook

# An LTS line that better-sqlite3 12.11 supports (Node 20 to 26).
ARG NODE_VERSION=24

# ---- build: every dependency (TypeScript, the native better-sqlite3), compile, then prune ----
FROM node:${NODE_VERSION}-bookworm-slim AS build
# better-sqlite3 fetches a prebuilt binary when one matches this Node; otherwise node-gyp
# compiles it, which needs these.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app

# 1. npm ci: exactly the lockfile's packages, dev ones included (the compiler).
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund

# 2. npm run build: tsconfig.build.json compiles src/ and handlers/ into dist/.
COPY . .
RUN npm run build

# 3. npm prune --omit=dev: production dependencies only (keeps the compiled native module).
RUN npm prune --omit=dev --no-audit --no-fund

# ---- runtime: production dependencies, dist/, migrations; no sources, no compiler ----
FROM node:${NODE_VERSION}-bookworm-slim AS runtime
WORKDIR /app

# 4. The runtime copy: only what `podhook serve` reads. Without src/, bin/podhook.js runs dist/.
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/bin ./bin
COPY --from=build /app/drizzle ./drizzle
COPY --from=build /app/scripts/healthcheck.mjs ./scripts/healthcheck.mjs

# The database lives on a volume, written by the unprivileged `node` user (the code stays
# root-owned and read-only to it). podhook creates the file owner-only: it holds secrets.
RUN mkdir -p /data && chown node:node /data
VOLUME /data
# A 4 MB young generation: the same throughput, about 35 MB less peak RSS under load (bench).
ENV NODE_ENV=production \
    NODE_OPTIONS=--max-semi-space-size=4 \
    HOST=0.0.0.0 \
    PORT=3000 \
    DATABASE_PATH=/data/podhook.db
USER node
EXPOSE 3000

# 5. Start, and check /healthz as docker-path.sh does. node runs as PID 1 and `podhook serve`
# handles SIGTERM itself: it stops accepting, lets in-flight requests and handlers finish (about
# 10 s at most), releases leases, closes the database and exits 0 (`--stop-timeout 20` allows it).
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 CMD ["node", "scripts/healthcheck.mjs"]
STOPSIGNAL SIGTERM
CMD ["node", "bin/podhook.js", "serve"]
