# scripts/servers.sh: the throwaway servers of scripts/test.sh and
# scripts/benchmarks.sh, sourced by both (not run on its own). Each runs on
# a free loopback port in a temporary directory ($WORKDIR) and is stopped by
# cleanup, which the sourcing script traps on EXIT: redis-server
# (start_redis), a PostgreSQL cluster (start_postgres, as an unprivileged
# user, since PostgreSQL refuses root) and a MariaDB (start_mariadb, as the
# user mysql, for the same reason); ensure_* install what is missing with
# apt-get (as root, or through sudo).

log() { printf '%s: %s\n' "$(basename "$0")" "$*" >&2; }

ensure_redis() {
  if command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1; then
    return
  fi
  log "redis-server not found: installing it with apt-get"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq redis-server redis-tools >/dev/null
}

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# free_port prints a loopback TCP port nobody listens on.
free_port() {
  local p
  for _ in $(seq 1 100); do
    p=$((20000 + RANDOM % 30000))
    if port_free "$p"; then echo "$p"; return; fi
  done
  log "no free port found"; return 1
}

WORKDIR=$(mktemp -d "${TMPDIR:-/tmp}/idemgen-$(basename "$0" .sh).XXXXXX")
PIDS=()
PGDATA_DIR=""
MARIADB_PID=""
cleanup() {
  if [ -n "$PGDATA_DIR" ]; then as_pg_user "$PG_BIN/pg_ctl" -D "$PGDATA_DIR" -m immediate -w stop >/dev/null 2>&1 || true; fi
  if [ -n "$MARIADB_PID" ]; then kill "$MARIADB_PID" 2>/dev/null || true; wait "$MARIADB_PID" 2>/dev/null || true; fi
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$WORKDIR"
}

# start_redis [extra args...]: a redis-server on a free loopback port, in the
# foreground of a background job, persistence off; waits until it answers and
# sets STARTED_PORT. free_port's check connects, which misses a port held by a
# socket that is bound but not listening (or taken meanwhile): redis-server
# then exits with "Address already in use", and another port is tried. The
# answer must come from this very process (INFO's process_id), not from a
# server someone else started on the port.
start_redis() {
  local port pid
  for _ in 1 2 3 4 5; do
    port=$(free_port)
    mkdir -p "$WORKDIR/$port"
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
      --dir "$WORKDIR/$port" --logfile "$WORKDIR/$port/redis.log" "$@" &
    pid=$!
    PIDS+=("$pid")
    for _ in $(seq 1 100); do
      if redis-cli -p "$port" info server 2>/dev/null | tr -d '\r' | grep -qx "process_id:$pid"; then
        STARTED_PORT=$port
        return
      fi
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1 # waiting for an external process to come up, not test synchronisation
    done
    if grep -q "Address already in use" "$WORKDIR/$port/redis.log" 2>/dev/null; then
      log "port $port is taken after all: trying another"
      continue
    fi
    log "redis-server on port $port did not start:"; cat "$WORKDIR/$port/redis.log" >&2; return 1
  done
  log "redis-server found no free port in 5 tries"; return 1
}

# pg_bin_dir prints the directory of the newest installed PostgreSQL's
# server binaries (Debian keeps them out of PATH), or nothing.
pg_bin_dir() {
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
  if [ -n "$d" ] && [ -x "$d/initdb" ]; then echo "$d"; return; fi
  command -v initdb >/dev/null 2>&1 && dirname "$(command -v initdb)"
}

ensure_postgres() {
  PG_BIN=$(pg_bin_dir || true)
  if [ -n "$PG_BIN" ]; then return; fi
  log "PostgreSQL not found: installing it with apt-get"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq postgresql >/dev/null
  PG_BIN=$(pg_bin_dir)
}

# PG_USER runs the server: PostgreSQL refuses root, so as root an
# unprivileged system user does (postgres, which the package creates, or
# idemgen-pg, created here); otherwise the current user.
PG_USER=""
as_pg_user() {
  if [ -z "$PG_USER" ]; then "$@"; else runuser -u "$PG_USER" -- "$@"; fi
}
pick_pg_user() {
  [ "$(id -u)" -eq 0 ] || return 0
  if id postgres >/dev/null 2>&1; then PG_USER=postgres; return; fi
  id idemgen-pg >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin idemgen-pg
  PG_USER=idemgen-pg
}

# start_postgres: initdb in $WORKDIR/pg (trust auth, user idem) and a
# server on a free loopback port with the settings in PG_SETTINGS (by
# default fsync off: a throwaway cluster); sets DATABASE_URL. The socket
# goes into the data directory's parent, not /run.
PG_SETTINGS=${PG_SETTINGS:-"-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300"}
start_postgres() {
  local port dir=$WORKDIR/pg
  mkdir -p "$dir"
  if [ -n "$PG_USER" ]; then chmod 711 "$WORKDIR"; chown "$PG_USER" "$dir"; fi
  as_pg_user "$PG_BIN/initdb" -D "$dir/data" -U idem --auth=trust -E UTF8 --no-sync >"$dir/initdb.log" 2>&1 \
    || { cat "$dir/initdb.log" >&2; return 1; }
  for _ in 1 2 3 4 5; do
    port=$(free_port)
    if as_pg_user "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
      -o "-p $port -k $dir -c listen_addresses=127.0.0.1 $PG_SETTINGS" \
      start >/dev/null 2>&1; then
      PGDATA_DIR=$dir/data
      export DATABASE_URL="postgres://idem@127.0.0.1:$port/postgres?sslmode=disable"
      return
    fi
    if grep -q "could not bind" "$dir/server.log" 2>/dev/null; then
      log "port $port is taken after all: trying another"
      continue
    fi
    log "PostgreSQL did not start:"; cat "$dir/server.log" >&2; return 1
  done
  log "PostgreSQL found no free port in 5 tries"; return 1
}

# mariadbd prints the path of MariaDB's server, or nothing. Debian keeps it
# in /usr/sbin, which is not on every user's PATH.
mariadbd_bin() {
  local b
  for b in /usr/sbin/mariadbd /usr/local/sbin/mariadbd; do
    if [ -x "$b" ]; then echo "$b"; return; fi
  done
  command -v mariadbd 2>/dev/null || true
}

ensure_mariadb() {
  MARIADBD=$(mariadbd_bin)
  if [ -n "$MARIADBD" ] && command -v mariadb-install-db >/dev/null 2>&1; then return; fi
  log "MariaDB not found: installing it with apt-get"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq mariadb-server >/dev/null
  MARIADBD=$(mariadbd_bin)
}

# MYSQL_USER runs mariadbd: as root the user mysql (which the package
# creates) or idemgen-mysql, created here; otherwise the current user.
MYSQL_USER=""
pick_mysql_user() {
  [ "$(id -u)" -eq 0 ] || return 0
  if id mysql >/dev/null 2>&1; then MYSQL_USER=mysql; return; fi
  id idemgen-mysql >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin idemgen-mysql
  MYSQL_USER=idemgen-mysql
}

# start_mariadb: mariadb-install-db in $WORKDIR/mariadb and a mariadbd on a
# free loopback port, with the production defaults the store's Check asks
# for (innodb_flush_log_at_trx_commit=1, a strict sql_mode, no binary log)
# and small buffers, so that it starts in a few seconds; a user idem
# (no password, every right) and a database idem; sets MYSQL_DSN. The
# tests' own private servers (runtime/mysqlstore/mysqltest) find mariadbd and
# MYSQL_USER the same way.
start_mariadb() {
  local port pid dir=$WORKDIR/mariadb user_opt=()
  mkdir -p "$dir/data" "$dir/tmp"
  if [ -n "$MYSQL_USER" ]; then chmod 711 "$WORKDIR"; chown -R "$MYSQL_USER" "$dir"; user_opt=(--user="$MYSQL_USER"); fi
  mariadb-install-db --no-defaults --datadir="$dir/data" "${user_opt[@]}" --tmpdir="$dir/tmp" \
    --auth-root-authentication-method=normal --skip-test-db --skip-name-resolve >"$dir/install.log" 2>&1 || { cat "$dir/install.log" >&2; return 1; }
  for _ in 1 2 3 4 5; do
    port=$(free_port)
    "$MARIADBD" --no-defaults --datadir="$dir/data" "${user_opt[@]}" --tmpdir="$dir/tmp" --socket="$dir/sock" \
      --pid-file="$dir/pid" --log-error="$dir/server.log" --port="$port" --bind-address=127.0.0.1 --skip-name-resolve \
      --max-connections=400 --innodb-buffer-pool-size=128M --innodb-log-file-size=48M 2>>"$dir/server.log" &
    pid=$!
    for _ in $(seq 1 300); do
      if mariadb --no-defaults -S "$dir/sock" -uroot -e "SELECT 1" >/dev/null 2>&1; then break; fi
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1 # waiting for an external process to come up, not test synchronisation
    done
    if ! kill -0 "$pid" 2>/dev/null; then
      wait "$pid" 2>/dev/null || true
      if grep -q "Address already in use" "$dir/server.log" 2>/dev/null; then
        log "port $port is taken after all: trying another"
        continue
      fi
      log "MariaDB did not start:"; cat "$dir/server.log" >&2; return 1
    fi
    MARIADB_PID=$pid
    mariadb --no-defaults -S "$dir/sock" -uroot -e \
      "CREATE USER IF NOT EXISTS 'idem'@'127.0.0.1'; GRANT ALL ON *.* TO 'idem'@'127.0.0.1'; CREATE DATABASE IF NOT EXISTS idem" \
      || { log "MariaDB: could not create the user idem"; cat "$dir/server.log" >&2; return 1; }
    export MYSQL_DSN="idem@tcp(127.0.0.1:$port)/idem"
    return
  done
  log "MariaDB found no free port in 5 tries"; return 1
}
