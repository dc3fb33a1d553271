#!/usr/bin/env bash
# The circle check (scripts/file_cycles.py) on its fixtures: it must find the circle in `circle/` (and fail), pass
# `clean/` (the same crate with the circle broken, test code and strings still naming the other file), and list
# an allowed circle without failing.
set -euo pipefail
cd "$(dirname "$0")"
fixture=file_cycles_fixture
check() { python3 file_cycles.py "$@"; }
want='kt-demo: area.rs -> shapes/square.rs -> area.rs'

if out=$(check --allow /dev/null "$fixture/circle" 2>&1); then
  echo "FAIL: the circle in $fixture/circle was not found" >&2; echo "$out" >&2; exit 1
fi
grep -qxF "CIRCLE: $want" <<<"$out" || { echo "FAIL: expected 'CIRCLE: $want' in:" >&2; echo "$out" >&2; exit 1; }

out=$(check --allow /dev/null "$fixture/clean") || { echo "FAIL: a circle reported in $fixture/clean:" >&2; echo "$out" >&2; exit 1; }

allow=$(mktemp); trap 'rm -f "$allow"' EXIT
printf '# known, to be broken\n%s\n' "$want" >"$allow"
out=$(check --allow "$allow" "$fixture/circle") || { echo "FAIL: an allowed circle failed the check:" >&2; echo "$out" >&2; exit 1; }
grep -qxF "allowed (to be broken): $want" <<<"$out" || { echo "FAIL: the allowed circle was not listed:" >&2; echo "$out" >&2; exit 1; }
out=$(check --allow "$allow" "$fixture/clean")
grep -qF "gone from" <<<"$out" || { echo "FAIL: a broken allowed circle was not reported gone:" >&2; echo "$out" >&2; exit 1; }
echo "file_cycles.py: 4 fixture checks passed"
