#!/usr/bin/env bash
# Runs a command against a private cluster of the system's PostgreSQL server (Debian's
# `postgresql` package, installed here when missing): the server a real deployment points
# DATABASE_URL at, not the embedded one. The cluster lives in a temporary directory on a free
# port, password-protected, listening on 127.0.0.1 only; it is stopped and removed at the end.
# The command finds the server's `postgres` database in TEST_PG_ADMIN_URL.
#   bash test/system-pg.sh node dist/test/run.js
set -euo pipefail

newest_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }

bin=$(newest_bin)
if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "system-pg: Debian's PostgreSQL server is not installed, and installing it needs root: apt-get install postgresql" >&2
    exit 2
  fi
  echo "system-pg: installing Debian's PostgreSQL server (apt-get install postgresql)" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  bin=$(newest_bin)
fi

dir=$(mktemp -d /tmp/transfer-system-pg-XXXXXX)
chmod 755 "$dir"
run_as=()
if [ "$(id -u)" = 0 ]; then
  # PostgreSQL refuses to run as root: the cluster belongs to the package's `postgres` user.
  run_as=(runuser -u postgres --)
  chown postgres "$dir"
fi
port=$(node -e 'const s = require("node:net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')
password=$(node -e 'console.log(require("node:crypto").randomBytes(18).toString("hex"))')
printf '%s\n' "$password" > "$dir/password"
[ "${#run_as[@]}" -eq 0 ] || chown postgres "$dir/password"

cleanup() {
  "${run_as[@]}" "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT

"${run_as[@]}" "$bin/initdb" -D "$dir/data" -U postgres --pwfile="$dir/password" -A scram-sha-256 -E UTF8 >/dev/null
"${run_as[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
  -o "-p $port -c listen_addresses=127.0.0.1 -c unix_socket_directories='' -c max_connections=200" start >/dev/null
echo "system-pg: $("$bin/postgres" --version) on 127.0.0.1:$port" >&2

export TEST_PG_ADMIN_URL="postgres://postgres:${password}@127.0.0.1:${port}/postgres"
"$@"
