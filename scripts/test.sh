#!/usr/bin/env bash
# scripts/test.sh: the project's test command (README.md "Two commands on a fresh machine").
#
# On a fresh machine it installs redis-server when it is missing (apt-get),
# starts a throwaway server on a free loopback port with persistence off,
# exports REDIS_URL, runs every test with the race detector, runs each fuzz
# target briefly, and stops the server whatever happens. It also starts a
# three-master Redis Cluster on loopback and exports REDIS_CLUSTER_ADDRS,
# and a private PostgreSQL cluster (installed with apt-get when missing,
# initdb'd in a temporary directory as an unprivileged system user, since
# PostgreSQL refuses root) on a free loopback port, exported as DATABASE_URL,
# and a private MariaDB (mariadb-server, installed with apt-get when
# missing; mariadb-install-db in a temporary directory, mariadbd run as the
# unprivileged user mysql, since it refuses root too) on a free loopback
# port, exported as MYSQL_DSN.
#
# Environment:
#   FUZZTIME   how much each fuzz target runs (default 5000x: executions, not
#              seconds, since a duration-based -fuzztime can fail spuriously with
#              "context deadline exceeded" in Go 1.26, golang/go#75804; 0 skips)
#   TESTFLAGS  extra flags for go test (e.g. -run Foo -v)
set -euo pipefail
cd "$(dirname "$0")/.."

# The servers' functions (start_redis, start_postgres, start_mariadb, cleanup).
. scripts/servers.sh
trap cleanup EXIT

# The repository's own text names no tracker issue and no commit hash: a
# second's check, before the servers start.
log "scripts/text-check.sh"
scripts/text-check.sh

ensure_redis
ensure_postgres
ensure_mariadb
pick_pg_user
start_postgres
log "PostgreSQL $("$PG_BIN/postgres" --version | awk '{print $3}') on $DATABASE_URL"
export PG_BIN PG_USER

pick_mysql_user
start_mariadb
log "MariaDB $("$MARIADBD" --version | awk '{print $3}') on $MYSQL_DSN"
export MYSQL_USER MYSQLD=$MARIADBD

start_redis
REDIS_PORT=$STARTED_PORT
export REDIS_URL="redis://127.0.0.1:$REDIS_PORT/0"
log "redis-server $(redis-server --version | awk '{print $3}') on $REDIS_URL"

# A three-master Redis Cluster on loopback, for the ClusterClient tests.
CLUSTER_ADDRS=()
for _ in 1 2 3; do
  start_redis --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 2000
  CLUSTER_ADDRS+=("127.0.0.1:$STARTED_PORT")
done
redis-cli --cluster create "${CLUSTER_ADDRS[@]}" --cluster-replicas 0 --cluster-yes >"$WORKDIR/cluster.log" 2>&1 \
  || { cat "$WORKDIR/cluster.log" >&2; exit 1; }
for _ in $(seq 1 100); do
  ok=1
  for a in "${CLUSTER_ADDRS[@]}"; do
    redis-cli -h "${a%:*}" -p "${a#*:}" cluster info 2>/dev/null | grep -q 'cluster_state:ok' || ok=0
  done
  [ "$ok" = 1 ] && break
  sleep 0.1 # waiting for the external cluster to converge, not test synchronisation
done
[ "$ok" = 1 ] || { log "redis cluster did not reach cluster_state:ok"; exit 1; }
REDIS_CLUSTER_ADDRS=$(IFS=,; echo "${CLUSTER_ADDRS[*]}")
export REDIS_CLUSTER_ADDRS
log "redis cluster on $REDIS_CLUSTER_ADDRS"

# The published modules' exported API is what api/*.txt lists, so that a
# change to it is made on purpose (docs/releasing.md).
log "the published API is api/*.txt"
go run ./internal/release/apifile

# Every module of the workspace (go.work): the runtime, each adapter, the
# generator, the examples, the end-to-end suite and the load harness.
MODULES=$(go list -m -f '{{.Dir}}')
for dir in $MODULES; do
  log "go test -race ${dir#"$PWD"/}"
  # shellcheck disable=SC2086
  (cd "$dir" && go test -race -count=1 -timeout 10m ${TESTFLAGS:-} ./...)
done

# The tool behind BENCHMARKS.md "Redis work per request", briefly: its checks
# (a create writes acquire.lua's record byte for byte, a replay replays) must
# hold on the real server.
log "scripts/redis-cost.sh, 2000 calls per row"
scripts/redis-cost.sh 2000 >"$WORKDIR/redis-cost.log" 2>&1 || { cat "$WORKDIR/redis-cost.log" >&2; exit 1; }

FUZZTIME=${FUZZTIME:-5000x}
if [ "$FUZZTIME" != "0" ]; then
  # Every Fuzz target in the repository, each for FUZZTIME, run from its
  # package's directory so that it resolves in its own module.
  while IFS=: read -r file name; do
    pkg="./$(dirname "$file")"
    log "fuzz $pkg $name for $FUZZTIME"
    (cd "$pkg" && go test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" .) >"$WORKDIR/fuzz.log" 2>&1 \
      || { cat "$WORKDIR/fuzz.log" >&2; exit 1; }
  done < <(grep -rhoE --include='*_test.go' -H '^func (Fuzz[A-Za-z0-9_]+)' . | sed -E 's/^\.\///; s/:func /:/' | sort -u)
fi
log "all tests passed"
