#!/usr/bin/env bash
# Runs the performance figures (files *_bench_test.go, build tag "bench",
# functions TestBench*) of every package and prints only their
# "BENCH <name> <value> <unit>" lines; they are figures, not pass/fail
# checks. "CONTEXT ..." lines, published figures of other projects that a
# bench's own sits beside (not measured here), pass through as well. If a
# figure's test fails, prints the whole go test output and fails. Called
# by `make bench`.
#
# `make bench` prints the headline figures, with a target of 30 minutes: the
# benches named below are left to `make bench-full` (PODNET_BENCH_FULL=1),
# the NRI burst runs at N = 30 with the arms without networks, with one
# podnet network and with one Multus network, and the same three paced (a
# pod every 500 ms; medians of three rounds), then on CRI-O without the
# Multus arms,
# and a bench whose headline needs less than its whole run picks its size
# with test/bench.Levels. Every variable below can still be set by hand.
set -uo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "make bench uses network namespaces: run it as root" >&2; exit 1; }
export CGO_ENABLED=0 GOFLAGS=-trimpath # make test's build configuration
skip='^$'
if [ "${PODNET_BENCH_FULL:-}" != 1 ]; then
  . hack/burst-headline.sh
  export PODNET_BURST_MODES=${PODNET_BURST_MODES:-nri} PODNET_BURST_N=${PODNET_BURST_N:-30} \
    PODNET_BURST_ARMS=${PODNET_BURST_ARMS:-$burstarms}
  # Figures that no headline quotes: the span bench (make test runs it at
  # its smallest size inside TestRootE2E), the wait container's footprint
  # and start, the status-write and placement benches, the peer cache's
  # heap, and the simulated-node scale bench (make bench-scale).
  skip='^(TestBenchSpan|TestBenchWaitFootprint|TestBenchWaitContainerStart|TestBenchPodStatusAdmission|TestBenchPlacement|TestBenchNodeCacheHeap|TestBenchScale)$'
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
# -v: without it go test drops what passing packages print, BENCH lines
# included. -p 1: one package at a time, so figures taken on a shared
# two-core machine do not compete with each other.
# -timeout bounds each package's test binary: the cluster bursts of
# test/burst (three NRI rounds of five arms at N = 30 and 100) ran past 60
# minutes on a 2-core machine that runs make test in an hour.
# Arguments, if any, replace ./... (e.g. hack/bench.sh ./pkg/dataplane).
# Each figure's test says on stderr when it starts, and a line every 20 s
# says the bench still runs (hack/stage.sh).
. hack/stage.sh
began=$(date +%s)
# benches ARG...: go test ARG... of the benches, its BENCH and CONTEXT
# lines printed, its whole output appended to $log; status is set to its
# exit status unless an earlier run failed.
status=0
benches() {
  go test -tags bench -count=1 -p 1 -v "$@" 2>&1 |
    tee -a "$log" | while IFS= read -r line; do
      case $line in
        'BENCH '*|'CONTEXT '*) echo "$line" ;;
        '=== RUN   TestBench'*) [[ $line == */* ]] || echo "== ${line#=== RUN   } ($(( $(date +%s) - began ))s in)" >&2 ;;
      esac
    done
  local rc=${PIPESTATUS[0]}
  [ "$status" != 0 ] || status=$rc
}
ticker_start "running benchmarks"
benches -run '^TestBench' -skip "$skip" -timeout 150m "${@:-./...}"
# The NRI burst again on CRI-O (burst_nri_crio_ lines): its arms with one
# podnet network, at once and paced, against those without (Multus is
# measured on containerd 2 only), in two rounds: what it answers is whether
# CRI-O's figures stand beside containerd 2's, and a third round put make
# bench past its 30 minutes.
if [ "${PODNET_BENCH_FULL:-}" != 1 ] && [ $# = 0 ]; then
  PODNET_BURST_ROUNDS=${PODNET_BURST_ROUNDS:-2} PODNET_BURST_RUNTIME=crio PODNET_BURST_ARMS=1_network,1_network_paced \
    benches -run '^TestBenchClusterBurst$' -timeout 60m ./test/burst/
fi
ticker_stop
echo "== make bench: done in $(( $(date +%s) - began ))s; the benches, slowest first:" >&2
grep -E '^--- (PASS|FAIL): TestBench' "$log" | sed -E 's/^--- ([A-Z]+): (TestBench[^ ]*) \(([0-9.]+)s\)$/\3 s  \2 (\1)/' | sort -rn >&2
if [ "$status" != 0 ]; then
  echo "bench: go test failed (exit $status); its output:" >&2
  cat "$log" >&2
fi
exit "$status"
