# The service in a container: built in one stage, run in a second one that holds only what runs,
# as the unprivileged `node` user, with its ledger (UBSCore's WAL, and the embedded PostgreSQL when
# no DATABASE_URL is given) in the /data volume. See compose.yaml for the usual way to run it with
# the official PostgreSQL image.

FROM node:22-bookworm-slim AS build
WORKDIR /app
# patches/: npm ci's postinstall applies them (patch-package) to the installed dependencies.
COPY package.json package-lock.json ./
COPY patches patches
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY src src
COPY actors actors
COPY wal wal
COPY bench bench
COPY test test
RUN node_modules/.bin/tsc -p tsconfig.json && npm prune --omit=dev --no-audit --no-fund

FROM node:22-bookworm-slim
ENV NODE_ENV=production HOST=0.0.0.0 PORT=8080 DATA_DIR=/data LOG_FORMAT=json
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules node_modules
COPY --from=build /app/dist/src dist/src
COPY --from=build /app/dist/actors dist/actors
COPY --from=build /app/dist/wal dist/wal
COPY --from=build /app/src/db/migrations src/db/migrations
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 8080
# SIGTERM drains in-flight requests (SHUTDOWN_DRAIN_MS) before the ordered stop.
STOPSIGNAL SIGTERM
CMD ["node", "dist/actors/main.js"]
