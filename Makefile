# The commands people type. Each installs what is missing and builds before it runs.

SHELL := /bin/bash
INSTALL_STAMP := node_modules/.install-stamp
TSC := node_modules/.bin/tsc

.PHONY: run test drill build install clean backup restore

## make run: start the service on its embedded PostgreSQL (PORT, DATA_DIR, DATABASE_URL, ... see README)
run: build
	node dist/src/main.js

## make test: the whole suite (uvu), on an embedded PostgreSQL the runner starts and stops
test: build
	node dist/test/run.js $(FILTER)

## make drill: kill the service with SIGKILL under load DRILL_CYCLES times (default 10), then verify every transfer and balance
drill: build
	node dist/bench/drill.js

## make bench: transfers/s, latency and memory under load beside the machine's limits measured in the same run (BENCH_DURATION_S, BENCH_MEMORY_S); writes bench/results/
.PHONY: bench
bench: build
	node dist/bench/run.js

## make backup BACKUP_DIR=/abs/dir: the running service (HOST/PORT, or SERVICE_URL) writes both halves of the ledger at one cut into a new directory
backup: build
	node dist/src/backup-cli.js backup

## make restore BACKUP_DIR=... DATA_DIR=... [DATABASE_URL=...]: into an empty DATA_DIR and a new embedded cluster, or an empty database
restore: build
	node dist/src/backup-cli.js restore

build: $(INSTALL_STAMP)
	$(TSC) -p tsconfig.json

install: $(INSTALL_STAMP)

$(INSTALL_STAMP): package.json package-lock.json
	@node -e 'const [major] = process.versions.node.split(".").map(Number); if (major < 20) { console.error("Node 20 or newer is required, found " + process.version); process.exit(1) }'
	@# Not `npm ci`: the registry here lacks some optional platform binaries that npm still
	@# names in the lockfile check, so `npm ci` refuses a lockfile `npm install` honours exactly.
	npm install --no-audit --no-fund
	@touch $@

clean:
	rm -rf dist
