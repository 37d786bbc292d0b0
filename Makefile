# The commands people type. Each installs what is missing and builds before it runs.

SHELL := /bin/bash
INSTALL_STAMP := node_modules/.install-stamp
TSC := node_modules/.bin/tsc

.PHONY: run test lint format test-external test-browser test-patroni chaos drill failover-drill build install clean backup restore migrate

## make run: start the service on its embedded PostgreSQL (PORT, DATA_DIR, DATABASE_URL, ... see docs/configuration.md)
run: build
	node dist/actors/main.js

## make test: the lint (make lint), then the whole suite (uvu), on an embedded PostgreSQL the runner starts and stops
test: build lint
	node dist/test/run.js $(FILTER)

## make lint: Biome checks the formatting and the lint rules, import boundaries and room sizes included (biome.json), then Redocly's recommended rules (redocly.yaml) check the OpenAPI document the code serves (written to .tmp/openapi.json), offline; and every path a comment names exists, no tracker number is cited (test/lint/comments.ts)
lint: build
	node_modules/.bin/biome ci --error-on-warnings
	node dist/test/lint/comments.js
	node dist/src/openapi-cli.js .tmp/openapi.json
	REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_NOTIFICATIONS=true node_modules/.bin/redocly lint --config redocly.yaml .tmp/openapi.json

## make format: Biome formats the tree and applies its safe lint fixes
format: $(INSTALL_STAMP)
	node_modules/.bin/biome check --write

## make test-external: the suite and a short drill on Debian's system PostgreSQL (installed when missing) through DATABASE_URL; the halt's 60 s hold is watched for 15 s here (make test watches it whole)
test-external: build
	HALT_HOLD_MS=$${HALT_HOLD_MS:-15000} bash test/system-pg.sh node dist/test/run.js $(FILTER)
	bash test/system-pg.sh sh -c 'psql -q "$$TEST_PG_ADMIN_URL" -c "CREATE DATABASE drill" && DATABASE_URL="$${TEST_PG_ADMIN_URL%/postgres}/drill" DRILL_CYCLES=$${DRILL_CYCLES:-3} node dist/test/drill/drill.js'

## make test-browser: the operator console in Debian's Chromium (installed when missing, as root); screenshots in test/artifacts/
test-browser: build
	@[ -n "$$CHROMIUM_PATH" ] || command -v chromium >/dev/null || (apt-get update && apt-get install -y chromium) || { echo "make test-browser needs Chromium: run 'apt-get install -y chromium' as root (Debian), or set CHROMIUM_PATH" >&2; exit 1; }
	node dist/test/browser/console.browser.js

## make migrate: apply the pending schema migrations (DATABASE_URL, or the embedded server of DATA_DIR) and exit
migrate: build
	node dist/src/migrate-cli.js

## make drill: kill the service with SIGKILL under load DRILL_CYCLES times (default 10), then verify every transfer and balance
drill: build
	node dist/test/drill/drill.js

## make failover-drill: a primary and a standby on one PostgreSQL under 16 clients; FAILOVER_CYCLES faults (default 5; FAILOVER_KINDS: sigkill, sigstop, stale-primary, pg-restart, pg-pause), each promotion timed (at most 5 s), then every transfer and balance verified
failover-drill: build
	node dist/test/failover/drill.js

## make test-patroni: the service on a replicated PostgreSQL (one etcd, two Patroni nodes in synchronous replication; Debian's patroni, etcd-server and postgresql installed when missing) rides a switchover and a leader SIGKILL under load; times to ready, errors clients saw, every acknowledged transfer and balance verified
test-patroni: build
	node dist/test/patroni/ride.js

## make chaos: a seeded nemesis (CHAOS_SEED, default random and printed) for CHAOS_SECONDS (default 600) against etcd, two Patroni nodes and a service primary and standby, each behind its own TCP proxy to PostgreSQL (kills, pauses, PostgreSQL restarts, switchovers, partitions, slow links) under 16 clients; an independent checker judges every answer in the history against the stores; CHAOS_REPORT=1 writes bench/results/chaos-*.json and .md; CHAOS_KEEP=1 keeps the run directory of a run that passed (a failing run keeps it); exits 1 on any violation or missed target (takeovers ready within 5 s of the lease passing, PostgreSQL failovers within 20 s; in runs of 900 s or more, at least 100 faults, 5 of them PostgreSQL failovers)
chaos: build
	node dist/test/chaos/chaos.js

## make bench: transfers/s, latency and memory under load beside the machine's limits measured in the same run (BENCH_DURATION_S, BENCH_MEMORY_S); writes bench/results/
.PHONY: bench
bench: build
	node dist/bench/run.js

## make soak: the service on a fresh DATA_DIR at a fixed rate (SOAK_RATE, default a third of what a 10 s closed loop of 64 clients commits on the same service first) for SOAK_MINUTES (default 30), killed with SIGKILL and restarted once in the middle, sampled every SOAK_SAMPLE_S (default 10); judges memory and UBSCore's directory flat and p99 steady (in runs of 10 minutes or more), errors, conservation; writes bench/results/soak-*.json and .md, exits 1 when a judgement fails
.PHONY: soak
soak: build
	node dist/bench/soak/run.js

## make backup BACKUP_DIR=/abs/dir: the running service (HOST/PORT, or SERVICE_URL) writes both halves of the ledger at one cut into a new directory
backup: build
	node dist/src/backup-cli.js backup

## make restore BACKUP_DIR=... DATA_DIR=... [DATABASE_URL=...]: into an empty DATA_DIR and a new embedded cluster, or an empty database
restore: build
	node dist/src/backup-cli.js restore

build: $(INSTALL_STAMP)
	$(TSC) -p tsconfig.json

install: $(INSTALL_STAMP)

$(INSTALL_STAMP): package.json package-lock.json $(wildcard patches/*.patch)
	@node -e 'const [major] = process.versions.node.split(".").map(Number); if (major < 20) { console.error("Node 20 or newer is required, found " + process.version); process.exit(1) }'
	@# npm ci installs exactly the committed lockfile, and its postinstall applies patches/ (patch-package).
	@# package.json pins msgpackr-extract through `overrides` to 3.0.4, the last version whose
	@# optional platform binaries are all published.
	npm ci --no-audit --no-fund
	@touch $@

clean:
	rm -rf dist
