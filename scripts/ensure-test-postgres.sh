#!/usr/bin/env bash
# Makes sure a local PostgreSQL server runs with a throwaway `engram_test` database, and prints its URL on
# stdout (nothing else goes to stdout; progress goes to stderr). Idempotent: run it as often as you like.
#
# Used by test/global-setup.ts when ENGRAM_TEST_PG_URL is not set, so that `npm test` works on a fresh
# Debian machine (CI included) without manual steps. Needs root (or passwordless sudo) the first time, to
# install and start the server; afterwards it only checks.
#
#   ENGRAM_TEST_PG_PORT      port to expect the cluster on (default: the cluster's own, usually 5432)
#   ENGRAM_TEST_PG_PASSWORD  password of the engram_test role (default engram_test: the server listens on
#                            loopback only and the database holds nothing but test data)
set -euo pipefail

ROLE=engram_test
DB=engram_test
PASSWORD="${ENGRAM_TEST_PG_PASSWORD:-engram_test}"

log() { echo "ensure-test-postgres: $*" >&2; }
die() { log "$*"; exit 1; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo -n "$@"
  else die "need root (or passwordless sudo) to run: $* ; or set ENGRAM_TEST_PG_URL to a PostgreSQL database you own"
  fi
}

as_postgres() {
  if [ "$(id -un)" = postgres ]; then "$@"
  elif [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"
  else as_root runuser -u postgres -- "$@"
  fi
}

if ! command -v pg_ctlcluster >/dev/null 2>&1 || ! command -v pg_lsclusters >/dev/null 2>&1; then
  log "PostgreSQL is not installed; installing it with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  as_root apt-get update -q >&2
  as_root apt-get install -y -q --no-install-recommends postgresql >&2
fi

# The newest installed cluster (pg_lsclusters: Ver Cluster Port Status Owner Data Log).
cluster="$(pg_lsclusters --no-header 2>/dev/null | sort -k1,1V | tail -n 1 || true)"
if [ -z "$cluster" ]; then
  version="$(ls /usr/lib/postgresql 2>/dev/null | sort -V | tail -n 1)"
  [ -n "$version" ] || die "PostgreSQL binaries not found under /usr/lib/postgresql"
  log "creating cluster $version main"
  as_root pg_createcluster "$version" main >&2
  cluster="$(pg_lsclusters --no-header | sort -k1,1V | tail -n 1)"
fi
read -r version name port status _ <<<"$cluster"
if [ -n "${ENGRAM_TEST_PG_PORT:-}" ] && [ "$ENGRAM_TEST_PG_PORT" != "$port" ]; then
  die "cluster $version $name listens on port $port, not ENGRAM_TEST_PG_PORT=$ENGRAM_TEST_PG_PORT"
fi
case "$status" in
  online*) ;;
  *)
    log "starting cluster $version $name (port $port)"
    as_root pg_ctlcluster "$version" "$name" start >&2
    ;;
esac

# Wait until it accepts connections (the first start after an install can take a moment).
for _ in $(seq 1 60); do
  if as_postgres psql -p "$port" -Atqc 'SELECT 1' >/dev/null 2>&1; then break; fi
  sleep 0.5
done
as_postgres psql -p "$port" -Atqc 'SELECT 1' >/dev/null || die "cluster $version $name does not accept connections on port $port"

psql_admin() { as_postgres psql -p "$port" -v ON_ERROR_STOP=1 -Atq "$@"; }

# The password is set on every run, so a role created by an earlier run with another password still works.
psql_admin -v role="$ROLE" -v pw="$PASSWORD" >&2 <<'SQL'
SELECT format('CREATE ROLE %I LOGIN', :'role') WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = :'role')
\gexec
SELECT format('ALTER ROLE %I WITH LOGIN PASSWORD %L', :'role', :'pw')
\gexec
SQL
if [ "$(psql_admin -c "SELECT 1 FROM pg_database WHERE datname = '$DB'")" != 1 ]; then
  log "creating database $DB"
  psql_admin -c "CREATE DATABASE $DB OWNER $ROLE" >&2
fi

echo "postgres://$ROLE:$PASSWORD@127.0.0.1:$port/$DB"
