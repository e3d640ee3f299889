#!/usr/bin/env bash
# scripts/text-check.sh: the repository's own text speaks of the product, so
# that a reader meets reasons, not a tracker's history. Every file that is
# not generated (no "Code generated ... DO NOT EDIT." line, not a chart the
# benchmarks drew), not a checksum file (go.sum, go.work.sum) and not binary
# is searched for
#
#   - a tracker reference: the word issue (or issues), then a number;
#   - a word that looks like a commit hash: 7 to 40 lowercase hex digits,
#     with at least one digit and one letter, standing alone (not part of a
#     longer word, a UUID or a path).
#
# A hit that is not such a reference (a test's hex constant, a hash the
# code needs) is allowed by a line of scripts/text-check.allow:
#
#   PATH<TAB>TEXT    a hit in file PATH on a line containing TEXT
#
# Say what to write instead: a design reason stays as a reason ("a text
# column compares keys by its collation"); the history is git's.
# Exits non-zero, listing each hit as FILE:LINE: TEXT, when one is found.
set -euo pipefail
cd "$(dirname "$0")/.."

ALLOW=scripts/text-check.allow
issue='\b[Ii]ssues? #?[0-9]+'
hash='(?<![0-9A-Za-z_./@:-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}(?![0-9A-Za-z_-])'

# The files to search: tracked or new, not ignored, text, not generated.
files() {
  git ls-files -z --cached --others --exclude-standard |
    grep -zvE '(^|/)go\.(work\.)?sum$|\.svg$|^scripts/text-check\.allow$' |
    xargs -0 grep -IZL -E '^// Code generated .* DO NOT EDIT\.$' -- 2>/dev/null || true
}

# Every hit as FILE:LINE:TEXT, less those an allow-list entry covers.
out=$(files | xargs -0 grep -IHnP -- "$issue|$hash" -- 2>/dev/null |
  awk -v allow="$ALLOW" '
    BEGIN {
      FS = "\t"
      while ((getline entry < allow) > 0) {
        if (entry == "" || entry ~ /^#/) continue
        split(entry, a, "\t")
        n++; path[n] = a[1]; text[n] = a[2]
      }
      FS = ":"
    }
    {
      file = $1; line = substr($0, length($1) + length($2) + 3)
      for (i = 1; i <= n; i++) if (path[i] == file && text[i] != "" && index(line, text[i])) next
      sub(/^[ \t]+/, "", line)
      print file ":" $2 ": " substr(line, 1, 160)
    }' || true)

if [ -n "$out" ]; then
  printf '%s\n' "$out"
  printf 'text-check: %d line(s) above name a tracker issue or a commit hash: say the reason or the behaviour instead (the history is git'"'"'s), or, for a hex value the code needs, add "PATH<TAB>TEXT" to %s\n' "$(printf '%s\n' "$out" | wc -l)" "$ALLOW" >&2
  exit 1
fi
