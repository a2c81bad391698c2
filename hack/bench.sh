#!/usr/bin/env bash
# Runs the performance figures (files *_bench_test.go, build tag "bench",
# functions TestBench*). Each prints lines "BENCH <name> <value> <unit>";
# they are figures, not pass/fail checks. Called by `make bench`.
set -uo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "make bench uses network namespaces: run it as root" >&2; exit 1; }

log=$(mktemp)
trap 'rm -f "$log"' EXIT
# One package at a time: the figures compare runs on a shared two-core machine.
go test -tags bench -count=1 -p 1 -timeout 60m -run '^TestBench' ./... >"$log" 2>&1
status=$?
grep -E '^(BENCH |FAIL|--- FAIL|ok )' "$log"
[ "$status" = 0 ] || { echo "bench run failed; full output:" >&2; cat "$log" >&2; }
exit "$status"
