#!/usr/bin/env bash
# scripts/benchmarks.sh: the tables of BENCHMARKS.md and their charts, from
# one command.
#
# It starts its own servers on free loopback ports and stops them whatever
# happens (scripts/servers.sh): a PostgreSQL cluster with production
# durability (fsync and synchronous_commit on) and a MariaDB with
# innodb_flush_log_at_trx_commit=1; idemload starts its own redis-servers.
# Then, in this order, each printing its table to stdout:
#
#   1. Redis: idemgen, the floors and the naive middlewares (idemload), and
#      the chart OUT/redis.svg;
#   2. Redis with a replica acknowledging (idemload);
#   3. the capacity of one Redis core and memory per record (idemload);
#   4. Redis work per request (scripts/redis-cost.sh);
#   5. the SQL stores against their floor (internal/storebench), and the
#      charts OUT/BenchmarkPostgresFloor.svg and OUT/BenchmarkMySQLFloor.svg.
#
# About 12 minutes on 2 cores. It installs redis-server, postgresql and
# mariadb-server with apt-get when they are missing (as root, or through
# sudo). Environment:
#   OUT     where the charts go (default benchmarks-out)
#   ROUNDS  rounds of each harness (default 3)
set -euo pipefail
cd "$(dirname "$0")/.."

# The servers' functions (start_postgres, start_mariadb, cleanup).
. scripts/servers.sh
trap cleanup EXIT

OUT=${OUT:-benchmarks-out}
ROUNDS=${ROUNDS:-3}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

# section prints a table's heading, with when it ran and how busy the
# machine was.
section() {
  log "$*"
  printf '\n# %s (%s UTC, load average %s)\n\n' "$*" "$(date -u '+%Y-%m-%d %H:%M')" "$(cut -d' ' -f1 /proc/loadavg)"
}

ensure_redis
ensure_postgres
ensure_mariadb
pick_pg_user
PG_SETTINGS="-c max_connections=100" start_postgres
pick_mysql_user
start_mariadb
export PG_BIN PG_USER MYSQL_USER MYSQLD=$MARIADBD

go build -o "$WORKDIR/idemload" ./cmd/idemload

section "Redis"
"$WORKDIR/idemload" -variants bare,check-then-set,setnx-lock,idemgen,floor,floor-store-autopipeline \
  -concurrency 32 -rounds "$ROUNDS" -dup-keys 200 -dup-fanout 16 -chart "$OUT/redis.svg"

section "Redis with a replica acknowledging"
"$WORKDIR/idemload" -variants idemgen,idemgen-replica,idemgen-replica-acks-off \
  -concurrency 32 -rounds "$ROUNDS" -no-replays -dup-keys 200 -dup-fanout 8

section "Capacity of one Redis core"
"$WORKDIR/idemload" -mode capacity -capacity-sizes 200,2048 -capacity-duration 3s

section "Memory per record"
"$WORKDIR/idemload" -mode memory -memory-records 100000 -memory-sizes 200,2048

section "Redis work per request"
scripts/redis-cost.sh 20000

section "SQL stores against their floor"
STOREBENCH_DATABASE_URL=$DATABASE_URL STOREBENCH_ROUNDS=$ROUNDS STOREBENCH_CHART_DIR=$OUT \
  go test -run '^$' -bench 'Benchmark(Postgres|MySQL)Floor$' -benchtime 2s -cpu 2 ./internal/storebench

log "charts in $OUT"
