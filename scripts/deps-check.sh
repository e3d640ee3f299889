#!/usr/bin/env bash
# scripts/deps-check.sh: what requiring idemgen costs a user's module, measured
# as a user would see it, so that a heavy dependency cannot creep back in.
#
#  1. A fresh module whose program imports only the runtime and the Redis
#     store (what a service using a generated server needs) has at most
#     RUNTIME_MAX modules in `go list -m all`, and none of the frameworks,
#     the OpenTelemetry SDK, kin-openapi or oapi-codegen.
#  2. A module with `go get -tool` of idemgen and oapi-codegen has at most
#     TOOL_EXTRA_MAX modules more than one with oapi-codegen's tool alone.
#  3. A fresh module whose program uses the runtime and the MySQL store
#     (runtime/mysqlstore) has, besides idemgen's own modules, only the
#     store's driver (github.com/go-sql-driver/mysql) and the driver's one
#     dependency more than the runtime's user of 1: at most MYSQL_EXTRA_MAX
#     modules from elsewhere, and never pgx.
#  3b. A module whose program uses only the PostgreSQL store, and one that
#     only uses the client, list no go-redis and no miniredis.
#  4. The graph of this checkout's modules (each go.mod's require lines,
#     read with `go mod edit -json`): a published module (PUBLISHED, what a
#     release tags) requires no module of this checkout that is not
#     published (test helpers, benchmark meters, the end-to-end tests), and
#     no two modules require each other, directly or through others.
#
# The modules of this checkout are not on the module proxy, so each fresh
# module reaches them through replace lines (what a user gets from a
# release's go.mod files is the same graph). Exits non-zero above a bound.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
M=github.com/idemgen/idemgen
RUNTIME_MAX=${RUNTIME_MAX:-16}
TOOL_EXTRA_MAX=${TOOL_EXTRA_MAX:-10}
MYSQL_EXTRA_MAX=${MYSQL_EXTRA_MAX:-2}
OAPI=github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2

log() { printf 'deps-check: %s\n' "$*" >&2; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/idemgen-deps.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
export GOWORK=off GOFLAGS=-mod=mod

# replaces prints a replace line for every module of this checkout.
replaces() {
  git -C "$ROOT" ls-files --cached --others --exclude-standard '*go.mod' | grep -v '^testdata/requirer/' | while read -r f; do
    d=$(dirname "$f")
    mod=$(awk '/^module /{print $2; exit}' "$ROOT/$f")
    echo "replace $mod => $ROOT/$d"
  done
}

# PUBLISHED lists the modules a release tags, by their directory; every
# other go.mod of the checkout is a module of tests, helpers or examples.
PUBLISHED=$(grep -v '^#' "$ROOT/scripts/published-modules")
# GRAPH_PENDING lists edges "published -> helper" still to be removed, each
# allowed until then; none today.
GRAPH_PENDING=${GRAPH_PENDING:-}

# requires prints "module required" for each require line of a go.mod, both
# as paths inside this checkout (the module path without the root's).
requires() {
  go mod edit -json "$1" | jq -r --arg m "$M" '
    .Module.Path as $self | (.Require // [])[] | select(.Path == $m or (.Path | startswith($m + "/")))
    | [$self, .Path] | map(if . == $m then "." else ltrimstr($m + "/") end) | join(" ")'
}

newmod() { # dir name
  mkdir -p "$1"
  printf 'module example.com/%s\n\ngo 1.25.0\n\n' "$2" >"$1/go.mod"
}

fail=0

# 1. The runtime alone.
newmod "$WORK/runtime-user" runtime-user
replaces >>"$WORK/runtime-user/go.mod"
printf 'require (\n\tgithub.com/idemgen/idemgen/runtime v0.0.0\n\tgithub.com/idemgen/idemgen/runtime/redisstore v0.0.0\n)\n' >>"$WORK/runtime-user/go.mod"
cat >"$WORK/runtime-user/main.go" <<'GO'
package main

import (
	"net/http"

	"github.com/redis/go-redis/v9"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/redisstore"
)

func main() {
	store := redisstore.New(redis.NewClient(&redis.Options{ContextTimeoutEnabled: true}))
	_ = idem.NewEngine(store).Middleware(idemop.Operation{ID: "op", Method: http.MethodPost, Path: "/op"})(http.NotFoundHandler())
}
GO
(cd "$WORK/runtime-user" && go mod tidy && go build ./...)
mods=$(cd "$WORK/runtime-user" && go list -m all)
n=$(echo "$mods" | wc -l)
log "runtime + redisstore user: $n modules in go list -m all (bound $RUNTIME_MAX)"
echo "$mods" | sed 's/^/  /' >&2
if [ "$n" -gt "$RUNTIME_MAX" ]; then log "FAIL: more than $RUNTIME_MAX modules"; fail=1; fi
heavy=$(echo "$mods" | grep -E 'gin-gonic|labstack|gorilla|go.opentelemetry.io/otel/sdk|getkin/kin-openapi|oapi-codegen' || true)
if [ -n "$heavy" ]; then log "FAIL: the runtime pulls $heavy"; fail=1; fi

# 3. The runtime with the MySQL store: the driver, and nothing else.
newmod "$WORK/mysql-user" mysql-user
replaces >>"$WORK/mysql-user/go.mod"
echo 'require github.com/idemgen/idemgen/runtime/mysqlstore v0.0.0' >>"$WORK/mysql-user/go.mod"
cat >"$WORK/mysql-user/main.go" <<'GO'
package main

import (
	"database/sql"
	"net/http"

	_ "github.com/go-sql-driver/mysql"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/mysqlstore"
)

func main() {
	db, _ := sql.Open("mysql", "idem@tcp(127.0.0.1:3306)/idem")
	_ = idem.NewEngine(mysqlstore.New(db)).Middleware(idemop.Operation{ID: "op", Method: http.MethodPost, Path: "/op"})(http.NotFoundHandler())
}
GO
(cd "$WORK/mysql-user" && go mod tidy && go build ./...)
extra=$( (cd "$WORK/mysql-user" && go list -m all) | grep -vxFf <(echo "$mods") | grep -v '^example.com/' || true)
ours=$(echo "$extra" | grep '^github.com/idemgen/idemgen/' || true)
extra=$(echo "$extra" | grep -v '^github.com/idemgen/idemgen/' || true)
m=$(echo "$extra" | grep -c . || true)
log "runtime + mysqlstore user: $m modules from elsewhere more than the runtime + redisstore user (bound $MYSQL_EXTRA_MAX)"
echo "$extra" | sed 's/^/  + /' >&2
echo "$ours" | sed 's/^/  + (idemgen) /' >&2
if [ "$m" -gt "$MYSQL_EXTRA_MAX" ]; then log "FAIL: mysqlstore pulls more than its driver"; fail=1; fi
if echo "$extra" | grep -q 'jackc/pgx'; then log "FAIL: mysqlstore pulls pgx"; fail=1; fi

# 3b. A PostgreSQL-only service and a program that only retries as a client
# have no Redis in their module graph: no go-redis, no miniredis.
newmod "$WORK/pg-user" pg-user
replaces >>"$WORK/pg-user/go.mod"
echo 'require github.com/idemgen/idemgen/runtime/pgstore v0.0.0' >>"$WORK/pg-user/go.mod"
cat >"$WORK/pg-user/main.go" <<'GO'
package main

import (
	"net/http"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/pgstore"
)

func main() {
	_ = idem.NewEngine(pgstore.New(nil)).Middleware(idemop.Operation{ID: "op", Method: http.MethodPost, Path: "/op"})(http.NotFoundHandler())
}
GO
newmod "$WORK/client-user" client-user
replaces >>"$WORK/client-user/go.mod"
echo 'require github.com/idemgen/idemgen/runtime v0.0.0' >>"$WORK/client-user/go.mod"
cat >"$WORK/client-user/main.go" <<'GO'
package main

import idem "github.com/idemgen/idemgen/runtime"

func main() { _ = idem.NewCaller() }
GO
for u in pg-user client-user; do
  (cd "$WORK/$u" && go mod tidy && go build ./...)
  mods=$(cd "$WORK/$u" && go list -m all)
  redis=$(grep -E 'redis/go-redis|alicebob/miniredis' <<<"$mods" || true)
  log "$u: $(wc -l <<<"$mods") modules in go list -m all, Redis among them: ${redis:-none}"
  if [ -n "$redis" ]; then log "FAIL: $u's module graph has $redis"; fail=1; fi
done

# 2. The generator as a tool, beside oapi-codegen's tool alone.
newmod "$WORK/tool-oapi" tool-oapi
(cd "$WORK/tool-oapi" && go get -tool "$OAPI" >/dev/null 2>&1)
base=$(cd "$WORK/tool-oapi" && go list -m all | wc -l)
newmod "$WORK/tool-both" tool-both
replaces >>"$WORK/tool-both/go.mod"
(cd "$WORK/tool-both" && go get -tool "$OAPI" >/dev/null 2>&1 &&
  go mod edit -require=github.com/idemgen/idemgen@v0.0.0 -tool=github.com/idemgen/idemgen/cmd/idemgen &&
  go mod tidy >/dev/null && go tool -n idemgen >/dev/null)
both=$(cd "$WORK/tool-both" && go list -m all | wc -l)
log "go get -tool: oapi-codegen alone $base modules, with idemgen $both: $((both - base)) more (bound $TOOL_EXTRA_MAX)"
(cd "$WORK/tool-both" && go list -m all) | grep -vxFf <(cd "$WORK/tool-oapi" && go list -m all) | sed 's/^/  + /' >&2 || true
if [ $((both - base)) -gt "$TOOL_EXTRA_MAX" ]; then log "FAIL: idemgen adds more than $TOOL_EXTRA_MAX modules"; fail=1; fi
# 4. The module graph: published modules require published ones only; no
# loop.
edges=$(git -C "$ROOT" ls-files --cached --others --exclude-standard '*go.mod' | while read -r f; do requires "$ROOT/$f"; done)
log "module graph: $(echo "$edges" | grep -c .) require lines between this checkout's modules"
while read -r from to; do
  case " $(echo $PUBLISHED) " in *" $from "*) ;; *) continue ;; esac
  case " $(echo $PUBLISHED) " in *" $to "*) continue ;; esac
  case " $GRAPH_PENDING " in *" $to "*) log "  pending: $from requires $to"; continue ;; esac
  log "FAIL: the published module $from requires $to, which no release publishes"; fail=1
done <<<"$edges"
if ! loop=$(echo "$edges" | tsort 2>&1 >/dev/null) || [ -n "$loop" ]; then
  log "FAIL: modules require each other:"; echo "$loop" | sed 's/^/  /' >&2; fail=1
fi
exit $fail
