#!/usr/bin/env bash
# Runs every test: unit and fuzz tests, root tests in throwaway network
# namespaces, integration tests against a real kube-apiserver, the kernel VM
# stage, and the cluster / end-to-end suites. Called by `make test` (which
# runs setup first); `make test-full` (PODNET_TEST_FULL=1) runs the whole
# end-to-end suite on both containerd runtimes and fuzzes four times longer.
#
# Each stage prints its start, a line every 20 s and its duration
# (hack/stage.sh). Every go test runs with -json into _output/testlog
# (hack/testlog), and the end of the run prints each stage's time and the
# slowest tests, pass or fail.
#
# One build configuration for everything this script compiles: the images
# and the kernel VM's test binaries are static (CGO_ENABLED=0) and built
# with -trimpath, so the tests are too, and each package compiles once.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "make test runs root tests (network namespaces, kubelet): run it as root" >&2; exit 1; }
export CGO_ENABLED=0 GOFLAGS=-trimpath
. hack/stage.sh
began=$(date +%s)
full=${PODNET_TEST_FULL:-}

logdir=$PWD/_output/testlog
rm -rf "$logdir"
mkdir -p "$logdir"
# Not exported: the scripts a stage runs (builds) have stages of their own.
PODNET_STAGE_RECORD=$logdir/stages.tsv
go build -o "$logdir/" ./hack/testlog ./hack/localcluster/cmd/localcluster
report() { "$logdir/testlog" report "$logdir" >&2 || true; }

# The suites bring their clusters down themselves (test/e2e's fixtures when
# the suites end); a suite killed by its -timeout may not. At the end,
# every local cluster that is up and was not before make test goes down.
upclusters() {
  local f
  for f in _output/cluster/*/cluster.json; do
    [ -e "$f" ] && basename "$(dirname "$f")"
  done
  return 0
}
upbefore=$(upclusters)
downleft() {
  local c
  for c in $(upclusters); do
    grep -qx "$c" <<<"$upbefore" && continue
    echo "make test: bringing down cluster $c, left up by a suite" >&2
    "$logdir/localcluster" down --name "$c" >&2 || true
  done
}
trap 'downleft; report' EXIT

# gotest NAME ARG...: go test ARG... with its events kept in NAME.json.
gotest() {
  local name=$1
  shift
  go test -json "$@" | "$logdir/testlog" record "$logdir/$name.json"
}

# One vet pass: the bench tag's files include every other file. The
# Multus module too: it requires podnet's module, so a new dependency of
# podnet's leaves its go.mod untidy, and this fails in a minute, not later.
vet() { go vet -tags bench ./... && (cd test/multusdiff && go vet ./...); }
stage "go vet" "about 2 min cold" vet

# containerd 2 from its Go module (hack/containerd2; cached by its pin):
# the CRI tests (test/critest) and the end-to-end suites use it.
stage "containerd 2 build" "seconds, about 2 min cold" hack/containerd2/build.sh
# CRI-O from its Go module (hack/crio; cached by its pin): the CRI tests
# run on it too, and the runtime chain below.
stage "CRI-O build" "seconds, about 4 min cold" hack/crio/build.sh

# Unit, root and integration tests of every package outside test/.
stage "unit, root and integration tests (outside test/)" "about 8 min cold" \
  gotest unit -count=1 -timeout 30m $(go list ./... | grep -v '^podnet.io/podnet/test/')

# CPU work that has no timing inside it runs beside the cluster suites, at
# the lowest priority, and is waited for before any suite with a deadline
# (the NRI plugin's 2 s timeout, the benches): building the previous
# release and the oldest Kubernetes, the Multus differential test, the
# kernel VM stage and fuzzing by count.
#
# Fuzzing runs for a fixed number of inputs (the seed corpora under
# testdata/fuzz also run as plain tests above), each sized to about 10 s
# here. A count, not a duration: Go 1.26's fuzz coordinator can report its
# own -fuzztime deadline as a failure ("context deadline exceeded", no
# failing input) on a loaded machine (go.dev/issue/75804, fixed in Go
# 1.27). Every target must pass: stage runs this in a || list, where set -e
# does not apply.
scale=1
[ -z "$full" ] || scale=4
fuzz1() { go test -timeout 30m -run '^$' -fuzz "^$1\$" -fuzztime "$(( $2 * scale ))x" "$3"; }
fuzz() {
  fuzz1 FuzzDecide 100000 ./pkg/policy &&
    fuzz1 FuzzProfileValues 50000 ./pkg/policy &&
    fuzz1 FuzzPodPrivilege 50000 ./pkg/policy &&
    fuzz1 FuzzNarrow 50000 ./pkg/policy &&
    fuzz1 FuzzRequireOnPod 50000 ./pkg/carry &&
    fuzz1 FuzzAddressArithmetic 5000 ./pkg/ipam &&
    fuzz1 FuzzDecode 80000 ./pkg/approval &&
    fuzz1 FuzzVerify 25000 ./pkg/approval &&
    fuzz1 FuzzParseUsage 300000 ./podwait &&
    fuzz1 FuzzDecodeContainer 50000 ./pkg/cri &&
    fuzz1 FuzzDecodeSandboxExtension 50000 ./pkg/cri
}
# Every TestBench* of `make bench`, each at its smallest size
# (PODNET_BENCH_SMOKE=1: test/bench.Size), so that a bench whose inputs are
# no longer built or whose checks fail breaks make test, not only make
# bench; its figures at this size mean nothing and are not printed. Only
# the packages with a bench file: the others would be linked for nothing.
# benchsmoke beside|serial: the packages whose benches start a container
# runtime or a local cluster (serialbenches) run after the cluster suites,
# serial; the others beside them, as their figures are not read.
serialbenches='podnet.io/podnet/test/agent podnet.io/podnet/hack/image podnet.io/podnet/test/burst podnet.io/podnet/test/e2e'
benchsmoke() {
  local which=$1 pkgs p keep=()
  pkgs=$(go list -tags bench -f '{{$p := .ImportPath}}{{range .TestGoFiles}}{{$p}} {{.}}{{"\n"}}{{end}}{{range .XTestGoFiles}}{{$p}} {{.}}{{"\n"}}{{end}}' ./... |
    awk '$2 ~ /_bench_test\.go$/ {print $1}' | sort -u) || return
  for p in $pkgs; do
    case " $serialbenches " in
      *" $p "*) [ "$which" = serial ] && keep+=("$p") ;;
      *) [ "$which" = beside ] && keep+=("$p") ;;
    esac
  done
  [ "${#keep[@]}" -gt 0 ] || { echo "no package with a *_bench_test.go file found ($which)" >&2; return 1; }
  # TestBenchSpan ran at this size inside TestRootE2E, on its cluster, and
  # the NRI burst on the NRI suites' (make test-full runs every mode here).
  local skip='^(TestBenchSpan|TestBenchClusterBurst)$'
  [ -z "$full" ] || skip='^TestBenchSpan$'
  PODNET_BENCH_SMOKE=1 gotest "benchsmoke-$which" -tags bench -count=1 -p 1 -timeout 30m -run '^TestBench' -skip "$skip" "${keep[@]}"
}
# Differential test of the request parser and the network-status against
# Multus and the NetworkAttachmentDefinition client: a module of its own, so
# podnet's go.mod never requires them.
multusdiff() { (cd test/multusdiff && gotest multusdiff -count=1 -timeout 20m ./...); }
beside() {
  local rc=0
  # The previous release for TestRootUpgrade, with its own make image
  # (hack/release: once per commit; the suite waits for it if it is not
  # done by then).
  stage "the previous release's build (beside)" "about 2 min" go run ./hack/release/cmd/podnet-release build >/dev/null || rc=1
  stage "the oldest supported Kubernetes' build (beside)" "seconds, 5 min cold" env BUILD_ONLY=1 hack/test-min-k8s.sh || rc=1
  stage "Multus differential test (beside)" "about 1 min, 2 min cold" multusdiff || rc=1
  # The same root tests, and those the host kernel cannot run (8021q,
  # ipvlan, bridge VLAN filtering, ...), on Debian's stock kernel in a VM:
  # every link kind is proven there, and a skip fails the stage. Under
  # TCG its CPU is already about ten times slower than the host's, and its
  # tests' waits are sized for that; beside, it shares the host's cores
  # with the cluster suites instead of adding five minutes after them.
  stage "kernel VM stage (Debian's stock kernel under qemu, beside)" "about 5 min, 10 min beside" hack/kernelvm/run.sh || rc=1
  stage "fuzzing (beside)" "about 9 min" fuzz || rc=1
  stage "benches without a runtime or a cluster, at their smallest size (beside)" "about 3 min, 5 min beside" benchsmoke beside || rc=1
  return "$rc"
}
besidelog=$logdir/beside.log
# Its log is read at the end: no "still" lines in it.
setsid nice -n 19 ionice -c 3 bash -c "$(declare -f beside fuzz fuzz1 multusdiff benchsmoke gotest stage); ticker_start() { :; }; ticker_stop() { :; }; scale=$scale full='$full' serialbenches='$serialbenches' logdir=$logdir PODNET_STAGE_RECORD=$PODNET_STAGE_RECORD; beside" \
  > "$besidelog" 2>&1 &
besidepid=$!
# waitbeside prints the work beside's log once it ends and fails if it did.
waitbeside() {
  [ -n "${besidepid:-}" ] || return 0
  local rc=0
  wait "$besidepid" || rc=$?
  besidepid=
  cat "$besidelog" >&2
  [ "$rc" = 0 ] || { echo "== the work beside the cluster suites failed (see above)" >&2; return 1; }
}
# Under set -e a failing command in the trap would end it early with its
# status: the kill of a group already gone must not.
stopbeside() { [ -z "${besidepid:-}" ] || kill -- "-$besidepid" 2>/dev/null || true; }
trap 'stopbeside; downleft; report' EXIT

# Cluster and end-to-end suites, one package at a time (the machine has two
# cores), every node on containerd 2 with NRI on: the runtime users have.
# The NRI suites wait for the work beside (their plugin timeout is 2 s).
nrisuites='^(TestRootE2EAttachWithNRI|TestRootE2ENRIFaults|TestRootE2EHoldAuto)$'
export PODNET_E2E_RUNTIME=containerd2
stage "cluster and end-to-end suites (test/...) on containerd 2" "about 15 min" \
  gotest e2e -count=1 -p 1 -timeout 60m -skip "$nrisuites" ./test/...
stage "waiting for the work beside" "" waitbeside
# The CRDs and the webhook against the oldest supported Kubernetes (its
# kube-apiserver was built beside): an API server's own caches lag on a
# machine kept busy, so not beside.
stage "oldest supported Kubernetes" "about 30 s" hack/test-min-k8s.sh
# The NRI suites hand their cluster (e2e-nri) to the NRI burst's smoke, as
# make bench runs it (mode, arms): one bring-up and install for both. The
# cluster goes down right after, whatever happened.
nricluster=e2e-nri
. hack/burst-headline.sh
nri() {
  local handover=$nricluster
  [ -z "$full" ] || handover=
  PODNET_E2E_HAND_OVER=$handover gotest nri -count=1 -timeout 30m -run "$nrisuites" ./test/e2e/
}
stage "NRI suites on containerd 2" "about 5 min" nri
nriburst() {
  local rc=0
  PODNET_BENCH_SMOKE=1 PODNET_BURST_CLUSTER=$nricluster PODNET_BURST_MODES=nri PODNET_BURST_ARMS=$burstarms \
    gotest nriburst -tags bench -count=1 -timeout 20m -run '^TestBenchClusterBurst$' ./test/burst/ || rc=$?
  "$logdir/localcluster" down --name "$nricluster" >&2 || rc=$?
  return "$rc"
}
[ -n "$full" ] || stage "the NRI burst at its smallest size, on the NRI suites' cluster" "about 1 min" nriburst
# The same NRI suites on CRI-O, its NRI default validator on as podnet
# documents it: the hold, the tenant who tries to waive it, the agent
# absent, hung, killed and stopped, the runtime restarted mid-burst.
nricrio() { PODNET_E2E_NRI_RUNTIME=crio gotest nri-crio -count=1 -timeout 30m -run "$nrisuites" ./test/e2e/; }
stage "NRI suites on CRI-O" "about 4 min" nricrio

# The runtime chain on containerd 1.6 and on CRI-O: the cluster's life and
# teardown, the CRI sandbox lookup and netns discovery, pods Ready with
# their interfaces, ping, runtime attach and detach, scale to zero leaving
# nothing, and the attach at sandbox setup. The suites that speak only to
# the API server (denials, attacks through the API, the controller,
# kubectl podnet) ran above; make test-full runs the whole suite here too.
# (The agent and CRI tests against a runtime of their own run on all three
# in the stages above: test/critest.Runtimes.)
chain='^TestRootE2E$/^(AdminProfileAndNamespace|TenantPodsReadyWithInterfaces|PingIPv4AndIPv6|RuntimeAttachDetach|ScaleToZeroLeavesNothing)$'
[ -z "$full" ] || chain='^TestRootE2E$'
# On CRI-O the agent refuses to attach at sandbox setup (CRI-O reports
# no sandbox before its CNI plugins ran, so no request could be checked:
# test/agent's TestRootAgentAttachAtSandboxSetup/crio); NRI holds pods
# there (the NRI suites above). Here podnet is installed with the Helm
# chart and the values file the cluster wrote, as a user of make demo
# would (PODNET_E2E_INSTALL=helm); the suites above install it with make
# deploy, and TestRootHelm moves from one to the other.
runtimechain() {
  PODNET_E2E_RUNTIME=$1 gotest "chain-$1" -count=1 -timeout 60m -run '^TestRootCluster' ./test/cluster/ &&
    { [ "$1" = crio ] || PODNET_E2E_RUNTIME=$1 PODNET_E2E_INSTALL=helm gotest "chain-$1" -count=1 -timeout 60m -run '^TestRootE2EAttachAtSandboxSetup$' ./test/e2e/; } &&
    PODNET_E2E_RUNTIME=$1 PODNET_E2E_INSTALL=helm gotest "chain-$1" -count=1 -timeout 60m -run "$chain" ./test/e2e/
}
stage "the runtime chain on containerd 1.6" "about 2 min" runtimechain containerd
stage "the runtime chain on CRI-O" "about 3 min" runtimechain crio
unset PODNET_E2E_RUNTIME

stage "benches that start a runtime or a cluster, at their smallest size" "about 1 min" benchsmoke serial
echo "make test: every stage passed in $(( $(date +%s) - began ))s" >&2
