#!/usr/bin/env bash
# Runs every test: unit and fuzz tests, root tests in throwaway network
# namespaces, integration tests against a real kube-apiserver, the kernel VM
# stage, and the cluster / end-to-end suites. Called by `make test` (which
# runs setup first). Each stage prints its start, a line every 20 s and its
# duration (hack/stage.sh); the durations are those of a warm run on two
# cores.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "make test runs root tests (network namespaces, kubelet): run it as root" >&2; exit 1; }
. hack/stage.sh
began=$(date +%s)

# The bench files too (build tag "bench"): `make bench` must keep compiling
# (the stage "benches at their smallest size" below also runs them). The
# Multus module too: it requires podnet's module, so a new dependency of
# podnet's leaves its go.mod untidy, and this fails in a minute, not later.
vet() { go vet ./... && go vet -tags bench ./... && (cd test/multusdiff && go vet ./...); }
stage "go vet" "about 1 min" vet

# containerd 2 from its Go module (hack/containerd2; cached by its pin):
# the CRI tests (test/critest) and the second end-to-end run use it.
stage "containerd 2 build" "seconds, about 2 min cold" hack/containerd2/build.sh

# Unit, root and integration tests of every package outside test/.
stage "unit, root and integration tests (outside test/)" "about 4 min" \
  go test -count=1 -timeout 30m $(go list ./... | grep -v '^podnet.io/podnet/test/')

# The same root tests, and those the host kernel cannot run (8021q, ipvlan,
# bridge VLAN filtering, ...), on Debian's stock kernel in a VM: every link
# kind is proven there, and a skip fails the stage.
stage "kernel VM stage (Debian's stock kernel under qemu)" "about 2 min, 4 min cold" hack/kernelvm/run.sh

# The CRDs and the webhook against the oldest supported Kubernetes.
stage "oldest supported Kubernetes" "about 30 s, 4 min cold" hack/test-min-k8s.sh

# Differential test of the request parser and the network-status against
# Multus and the NetworkAttachmentDefinition client: a module of its own, so
# podnet's go.mod never requires them.
multusdiff() { (cd test/multusdiff && go vet ./... && go test -count=1 -timeout 10m ./...); }
stage "Multus differential test" "about 30 s, 2 min cold" multusdiff

# Fuzzing for a fixed number of runs (the seed corpora under testdata/fuzz
# also run as plain tests above), each sized to about 10 s here. A count,
# not a duration: Go 1.26's fuzz coordinator can report its own -fuzztime
# deadline as a failure ("context deadline exceeded", no failing input) on
# a loaded machine (go.dev/issue/75804, fixed in Go 1.27). Every target
# must pass: stage runs this in a || list, where set -e does not apply.
fuzz() {
  go test -timeout 10m -run '^$' -fuzz '^FuzzDecide$' -fuzztime 100000x ./pkg/policy &&
    go test -timeout 10m -run '^$' -fuzz '^FuzzProfileValues$' -fuzztime 50000x ./pkg/policy &&
    go test -timeout 10m -run '^$' -fuzz '^FuzzPodPrivilege$' -fuzztime 50000x ./pkg/policy &&
    go test -timeout 10m -run '^$' -fuzz '^FuzzNarrow$' -fuzztime 50000x ./pkg/policy &&
    go test -timeout 10m -run '^$' -fuzz '^FuzzRequireOnPod$' -fuzztime 50000x ./pkg/carry &&
    go test -timeout 10m -run '^$' -fuzz '^FuzzAddressArithmetic$' -fuzztime 5000x ./pkg/ipam &&
    go test -timeout 10m -run '^$' -fuzz '^FuzzDecode$' -fuzztime 80000x ./pkg/approval &&
    go test -timeout 10m -run '^$' -fuzz '^FuzzVerify$' -fuzztime 25000x ./pkg/approval &&
    go test -timeout 10m -run '^$' -fuzz '^FuzzParseUsage$' -fuzztime 300000x ./podwait &&
    go test -timeout 10m -run '^$' -fuzz '^FuzzDecodeContainer$' -fuzztime 50000x ./pkg/cri &&
    go test -timeout 10m -run '^$' -fuzz '^FuzzDecodeSandboxExtension$' -fuzztime 50000x ./pkg/cri
}
stage "fuzzing" "about 1 min" fuzz

# Cluster and end-to-end suites, one package at a time: each brings up its own
# local cluster and the machine has two cores.
if [ -n "$(go list ./test/... 2>/dev/null)" ]; then
  stage "cluster and end-to-end suites (test/...)" "about 12 min" go test -count=1 -p 1 -timeout 60m ./test/...
  # The cluster suite, the whole end-to-end suite and the chained CNI one
  # again, with every node on containerd 2 (NRI on): the cluster's life
  # and teardown, the CRI sandbox lookups, the netns discovery and the
  # attach at sandbox setup must hold on both runtimes. (The agent and CRI
  # tests against a containerd of their own run on both in the stages
  # above: test/critest.Runtimes.)
  stage "cluster and end-to-end suites on containerd 2" "about 5 min" \
    env PODNET_E2E_RUNTIME=containerd2 go test -count=1 -p 1 -timeout 60m -run '^TestRootCluster|^TestRootE2E(AttachAtSandboxSetup)?$' ./test/cluster/ ./test/e2e/
fi
# Every TestBench* of `make bench`, each at its smallest size
# (PODNET_BENCH_SMOKE=1: test/bench.Size), so that a bench whose inputs are
# no longer built or whose checks fail breaks make test, not only the
# 48-minute make bench; its figures at this size mean nothing and are not
# printed. Each cluster bench brings up its own local cluster; the burst
# bench, a cluster for each of its two modes, takes 2.5 of the 6 minutes.
# Only the packages with a bench file: the others would be linked for nothing.
benchsmoke() {
  local pkgs
  pkgs=$(go list -tags bench -f '{{$p := .ImportPath}}{{range .TestGoFiles}}{{$p}} {{.}}{{"\n"}}{{end}}{{range .XTestGoFiles}}{{$p}} {{.}}{{"\n"}}{{end}}' ./... |
    awk '$2 ~ /_bench_test\.go$/ {print $1}' | sort -u) || return
  [ -n "$pkgs" ] || { echo "no package with a *_bench_test.go file found" >&2; return 1; }
  PODNET_BENCH_SMOKE=1 go test -tags bench -count=1 -p 1 -timeout 30m -run '^TestBench' $pkgs
}
stage "benches at their smallest size" "about 6 min" benchsmoke
echo "make test: every stage passed in $(( $(date +%s) - began ))s" >&2
