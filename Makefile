# podnet — see README.md. Every target installs what it needs (hack/setup.sh).
SHELL := /bin/bash
GO ?= go
OUT := $(CURDIR)/_output
K8S_BIN := $(OUT)/k8s/bin
export KUBEBUILDER_ASSETS := $(OUT)/envtest
export PATH := $(K8S_BIN):$(PATH)

.PHONY: all setup k8s envtest-assets generate manifests build test test-full test-unit test-e2e test-kernel test-min-k8s fuzz bench bench-full bench-scale \
	cluster-up cluster-down image push deploy undeploy demo demo-down demo-span demo-span-down verify keys cert-manager \
	helm chart helm-install containerd2 crio

all: build

## setup: install the Debian packages podnet's tests and local cluster need.
setup:
	hack/setup.sh

## k8s: build the pinned Kubernetes commands (only when the pin changed).
k8s:
	hack/build-k8s.sh

## envtest-assets: expose the built kube-apiserver and Debian's etcd to envtest.
envtest-assets: k8s
	mkdir -p $(KUBEBUILDER_ASSETS)
	ln -sf $(K8S_BIN)/kube-apiserver $(K8S_BIN)/kubectl $(KUBEBUILDER_ASSETS)/
	ln -sf $$(command -v etcd) $(KUBEBUILDER_ASSETS)/etcd

## generate: deepcopy functions from the API types.
generate:
	$(GO) tool controller-gen object paths=./api/...

## manifests: CRDs, RBAC and webhook configuration from controller-gen markers,
## and the Helm chart made from them (make chart).
manifests:
	hack/manifests.sh
	$(MAKE) chart

## chart: the Helm chart deploy/helm/podnet, generated from deploy/ by
## hack/helmchart (kustomize of deploy/default and of the other hold modes'
## overlays); never edited by hand.
chart: k8s
	$(GO) run ./hack/helmchart -out deploy/helm/podnet

## helm: the helm command pinned in hack/helm/go.mod, built into
## _output/helm/bin (only when the pin changed).
helm:
	hack/helm/build.sh

## helm-install: podnet from deploy/helm/podnet onto the cluster KUBECONFIG
## points at, which must run cert-manager; HELM_ARGS adds flags, e.g.
## HELM_ARGS="--set images.registry=ghcr.io/acme/podnet --set images.tag=v0.2.0".
## On a local cluster, HELM_VALUES is the values file it wrote, e.g.
## HELM_VALUES=_output/cluster/demo/helm-values.yaml (docs/install.md).
helm-install: helm
	$(OUT)/helm/bin/helm upgrade --install podnet deploy/helm/podnet --namespace podnet-system --create-namespace --wait $(if $(HELM_VALUES),-f $(HELM_VALUES)) $(HELM_ARGS)

## build: the podnet binaries and the kubectl plugin (kubectl-podnet) into _output/bin;
## podnet-wait, which runs in every podnet pod, and podnet-agent, which runs on every
## node, stripped (-s -w) to stay small; the agent without gRPC's request tracing
## (grpcnotrace), which keeps code it never runs in its binary and memory
## (hack/image's commandFlags builds them the same way).
build:
	CGO_ENABLED=0 $(GO) build -trimpath -o $(OUT)/bin/ ./cmd/podnet-webhook ./cmd/podnet-cni ./cmd/podnet-controller ./cmd/kubectl-podnet
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w" -o $(OUT)/bin/ ./cmd/podnet-wait
	CGO_ENABLED=0 $(GO) build -trimpath -tags grpcnotrace -ldflags "-s -w" -o $(OUT)/bin/ ./cmd/podnet-agent

## image: container images of every podnet binary, plus pause and busybox for
## the local cluster, as tarballs in _output/images (TAG=dev by default) for
## `ctr -n k8s.io images import`. No Docker engine or registry needed.
TAG ?= dev
image: build
	$(GO) run ./hack/image/cmd/podnet-image build -root $(CURDIR) -bin $(OUT)/bin -out $(OUT)/images -tag $(TAG)

## push: the webhook, agent, wait and controller images to a registry: REGISTRY replaces
## localhost/podnet, e.g. `make push REGISTRY=ghcr.io/acme/podnet TAG=v0.1.0`.
## Credentials come from ~/.docker/config.json.
push: build
	@[ -n "$(REGISTRY)" ] || { echo "push: set REGISTRY, e.g. make push REGISTRY=ghcr.io/acme/podnet" >&2; exit 2; }
	$(GO) run ./hack/image/cmd/podnet-image push -bin $(OUT)/bin -registry $(REGISTRY) -tag $(TAG)

## test: every test — unit, fuzz, root netlink, integration and end-to-end
## (about 40 minutes cold on 2 cores; docs/development.md says what each
## stage proves). Each stage's time and the slowest tests end the log.
test: setup envtest-assets helm
	hack/test.sh

## test-full: make test, plus the whole end-to-end suite on containerd 1.6
## (make test runs the runtime chain there) and fuzzing four times longer:
## what a maintainer runs before a release.
test-full: setup envtest-assets helm
	PODNET_TEST_FULL=1 hack/test.sh

## test-kernel: the root tests that need only netlink and network namespaces,
## on Debian's stock kernel in a qemu VM (hack/kernelvm); fails on any
## failure or skip there. `make test` runs it too.
test-kernel: setup
	hack/kernelvm/run.sh

## test-min-k8s: the CRDs and the webhook against the oldest supported
## kube-apiserver (built once from hack/tools-min).
test-min-k8s: setup envtest-assets
	hack/test-min-k8s.sh

## bench: the headline performance figures, one "BENCH <name> <value> <unit>"
## line each, in a target of 30 minutes (hack/bench.sh names what it leaves to
## bench-full). The burst bench (test/burst) runs NRI mode on containerd 2
## at N = 30, arms without networks, with one podnet and one Multus network,
## and paced without networks and with one podnet network (a pod every
## 500 ms), three rounds with medians, then the podnet arms on CRI-O in two
## rounds; PODNET_BURST_N (e.g. 5), PODNET_BURST_MODES
## (wait,cni,nri), PODNET_BURST_ARMS, PODNET_BURST_RUNTIME (containerd) and
## PODNET_BURST_ROUNDS override. Each arm waits for a quiet machine first.
## PODNET_BENCH_SMOKE=1 runs every bench at its smallest size, as make test does.
bench: setup envtest-assets
	hack/bench.sh

## bench-full: every figure at its whole size (3,756 s in its last run): the burst
## bench in wait and NRI mode at N = 30 and 100 with every arm, and the
## benches make bench leaves out.
bench-full: setup envtest-assets
	PODNET_BENCH_FULL=1 hack/bench.sh

## bench-scale: the scale bench (test/scale) at K = 10, 100 and 500
## simulated nodes, and the earlier design at K = 10 and 100, with log-log
## slopes; `make bench-full` runs its short form (K = 10 each). Override with
## SCALE_K=10,100 SCALE_OLD_K=10. The controller bench runs at
## CONTROLLER_PODS pods (`make bench`: 10,000). The IPAM bench starts
## IPAM_PODS pods at once on 10 nodes, from a roomy and from an exact pool
## (`make bench`: 100 pods).
SCALE_K ?= 10,100,500
SCALE_OLD_K ?= 10,100
CONTROLLER_PODS ?= 10000,50000,150000
IPAM_PODS ?= 1000
bench-scale: setup envtest-assets
	PODNET_BENCH_FULL=1 PODNET_SCALE_K=$(SCALE_K) PODNET_SCALE_OLD_K=$(SCALE_OLD_K) PODNET_CONTROLLER_PODS=$(CONTROLLER_PODS) \
		PODNET_IPAM_PODS=$(IPAM_PODS) hack/bench.sh ./test/scale

## cluster-up: local cluster from real components in network namespaces
## (CLUSTER=podnet, NODES=2 for a second node); prints its KUBECONFIG.
## RUNTIME=containerd2 runs each node on containerd 2 (`make containerd2`),
## RUNTIME=crio on CRI-O (`make crio`), instead of Debian's containerd 1.6.
CLUSTER ?= podnet
NODES ?= 1
RUNTIME ?=
cluster-up: setup k8s
	$(GO) run ./hack/localcluster/cmd/localcluster up --name $(CLUSTER) --nodes $(NODES) --runtime "$(RUNTIME)"

## cluster-down: stop the local cluster; removes its mounts, netns and interfaces.
cluster-down:
	$(GO) run ./hack/localcluster/cmd/localcluster down --name $(CLUSTER)

## keys: a development Ed25519 key pair for signing approvals (kept if present).
keys:
	$(GO) run ./cmd/podnet-keygen -private $(OUT)/keys/approval.key -public $(OUT)/keys/approval.pub

## deploy: podnet onto the cluster KUBECONFIG points at, which must run
## cert-manager: approval key secrets from `make keys`, then kubectl apply -k
## deploy/ (DEPLOY=another kustomization), waiting for the rollouts.
deploy:
	hack/deploy.sh

## undeploy: podnet off the cluster KUBECONFIG points at, with pods running:
## `podnet-controller uninstall` (every agent detaches its node's pods and
## cleans its node), then kubectl delete of DEPLOY's objects; the CRDs (and
## so the NetworkProfiles) stay unless DELETE_CRDS=1.
undeploy:
	hack/undeploy.sh

## cert-manager: cert-manager's controllers and CRDs, built from its Go
## module (hack/cert-manager) into _output/cert-manager.
cert-manager:
	hack/cert-manager/build.sh

## containerd2: containerd 2 and its runc shim, built from its Go module
## (hack/containerd2) into _output/containerd2/bin (only when the pin
## changed). RUNTIME=containerd2 runs the local cluster's nodes on it.
containerd2:
	hack/containerd2/build.sh

## crio: CRI-O and its pinns, built from CRI-O's Go module (hack/crio) into
## _output/crio/bin (only when the pin changed); conmon and runc are
## Debian's. RUNTIME=crio runs the local cluster's nodes on it.
crio:
	hack/crio/build.sh

## demo: local cluster, images, cert-manager, podnet from deploy/, the samples
## from deploy/samples; prints the pods' interfaces and a ping between them.
demo: setup k8s
	$(GO) run ./hack/demo up --runtime "$(RUNTIME)"

## demo-down: tear the demo cluster down.
demo-down:
	$(GO) run ./hack/demo down

## demo-span: a two-node local cluster and podnet; two pods, one per node, ping over a VXLAN network.
demo-span: setup k8s
	$(GO) run ./hack/demo up --span --name demo-span --runtime "$(RUNTIME)"

## demo-span-down: tear the demo-span cluster down.
demo-span-down:
	$(GO) run ./hack/demo down --name demo-span
