#!/usr/bin/env bash
# scripts/depgraph.sh: the dependency picture of ARCHITECTURE.md, from
# `go list`: for each package below, the packages of this repository it
# imports (its own code, not its tests), and what the engine's tests
# reach. With -check it compares the picture with the one in
# ARCHITECTURE.md (between its depgraph markers) and exits 1 when they
# differ; with -write it rewrites that block. The edges this picture must
# not regain are also checked by tests (runtime/deps_test.go,
# internal/generator/deps_test.go).
set -euo pipefail
cd "$(dirname "$0")/.."

M=github.com/idemgen/idemgen
PKGS=(
  ./runtime ./runtime/idemop ./runtime/idemstore ./runtime/idemstore/memstore
  ./runtime/idemstore/idemstoretest ./runtime/redisstore ./runtime/pgstore ./runtime/mysqlstore
  ./runtime/internal/sqlfamily/sqlfamilytest
  ./runtime/idemfiber ./runtime/idemfiber3
  ./internal/extension ./internal/model ./internal/load ./internal/render
  ./internal/overlay ./internal/generator ./internal/cli ./internal/ctl ./internal/probe
)

short() { sed -e "s#^$M/runtime\$#idem (runtime)#" -e "s#^$M/##"; }

picture() {
  for p in "${PKGS[@]}"; do
    go list -f '{{.ImportPath}}{{range .Imports}} {{.}}{{end}}' "$p"
  done | while read -r pkg imports; do
    deps=$(for i in $imports; do case $i in "$M"|"$M"/*) echo "$i" | short;; esac; done | sort | paste -sd, - | sed 's/,/, /g')
    printf '%-32s -> %s\n' "$(echo "$pkg" | short)" "${deps:-(standard library only)}"
  done
  echo
  echo "go list -deps -test ./runtime (the engine's tests), this repository's packages and drivers:"
  go list -deps -test ./runtime | grep -E "^$M/|^github.com/redis/|^github.com/alicebob/" | grep -v -E '\.test$|\[' | short | paste -sd' ' - | fold -s -w 96 | sed 's/ *$//; s/^/  /'
}

case "${1:-}" in
  "") picture ;;
  -check|-write)
    want=$(picture)
    block=$(awk '/<!-- depgraph -->/{f=1; next} /<!-- \/depgraph -->/{f=0} f' ARCHITECTURE.md | sed '1d;$d')
    if [ "$1" = -check ]; then
      if [ "$want" != "$block" ]; then
        echo "ARCHITECTURE.md's dependency picture is stale; run scripts/depgraph.sh -write:"
        diff <(echo "$block") <(echo "$want") || true
        exit 1
      fi
      exit 0
    fi
    awk -v pic="$want" '/<!-- depgraph -->/{print; print "```text"; print pic; print "```"; skip=1; next}
      /<!-- \/depgraph -->/{skip=0} !skip' ARCHITECTURE.md > ARCHITECTURE.md.new
    mv ARCHITECTURE.md.new ARCHITECTURE.md ;;
  *) echo "usage: scripts/depgraph.sh [-check|-write]" >&2; exit 2 ;;
esac
