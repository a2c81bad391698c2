#!/usr/bin/env bash
# Builds the Kubernetes commands pinned in hack/tools/go.mod into
# _output/k8s/bin. It rebuilds only when the pin (hack/tools/go.mod, go.sum)
# changes, so a warm cluster start costs nothing here.
# K8S_TOOLS (a module folder), K8S_CMDS and K8S_BIN_DIR build another pin:
# hack/test.sh builds the oldest supported kube-apiserver from hack/tools-min.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${K8S_BIN_DIR:-$root/_output/k8s/bin}
tools=$root/${K8S_TOOLS:-hack/tools}
version=$(awk '$1=="require" && $2=="k8s.io/kubernetes" {print $3}' "$tools/go.mod")
cmds=${K8S_CMDS:-kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl kube-proxy}
stamp=$( (cat "$tools/go.mod" "$tools/go.sum" "$0"; echo "$cmds") | sha256sum | cut -c1-16)

if [ -f "$out/.stamp" ] && [ "$(cat "$out/.stamp")" = "$stamp" ]; then
  exit 0
fi
mkdir -p "$out"
rm -f "$out/.stamp"
major=$(echo "${version#v}" | cut -d. -f1)
minor=$(echo "${version#v}" | cut -d. -f2)
pkg=k8s.io/component-base/version
ldflags="-s -w -X $pkg.gitVersion=$version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
ldflags="$ldflags -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
ldflags="$ldflags -X k8s.io/client-go/pkg/version.gitVersion=$version"
echo "building Kubernetes $version ($cmds) into $out (about 6 min cold on 2 cores, cached after)…"
# A line every 20 s while the builds run, and the total at the end, so that
# `make demo` and `make k8s` never sit silent.
. "$root/hack/stage.sh"
began=$(date +%s)
ticker_start "building Kubernetes $version"
cd "$tools"
# One go build for every command: the packages they share compile once
# and the links run in parallel.
pkgs=()
for c in $cmds; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$out/" "${pkgs[@]}"
ticker_stop
echo "$stamp" > "$out/.stamp"
echo "building Kubernetes $version… done in $(( $(date +%s) - began ))s"
