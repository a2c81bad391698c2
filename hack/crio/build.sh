#!/usr/bin/env bash
# Builds CRI-O, pinned in this folder's module (go.mod, tools.go), into
# _output/crio/bin: crio from its Go module, and pinns (which CRI-O runs to
# make a pod's namespaces) from the C sources in the same module version,
# static, and the image policy it reads. conmon and runc are Debian's. It rebuilds only when the pin
# (go.mod, go.sum) or this script changes.
#
# v1.36 is the first CRI-O whose configuration has NRI's default
# validator ([crio.nri.default_validator]), which a pod held by NRI needs.
# Two of its dependencies (github.com/CloudNativeAI/model-spec and a
# github.com/containerd/nri pseudo-version) are unknown to the checksum
# database: their sums were taken once with GONOSUMDB for just those and
# are kept in go.sum, which every later build checks.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${CRIO_BIN_DIR:-$root/_output/crio/bin}
mod=github.com/cri-o/cri-o
version=$(awk -v m="$mod" '($1=="require" && $2==m) || $1==m {print ($1=="require" ? $3 : $2)}' "$here/go.mod")
stamp=$( (cat "$here/go.mod" "$here/go.sum" "$0") | sha256sum | cut -c1-16)
mkdir -p "$out"
# The image signature policy CRI-O checks each container's image against
# (signature_policy in localcluster.CRIOConfig): every image, since a
# node never pulls; its images are imported from the project's own
# tarballs.
echo '{"default": [{"type": "insecureAcceptAnything"}]}' > "$out/policy.json"
if [ -f "$out/.stamp" ] && [ "$(cat "$out/.stamp")" = "$stamp" ]; then
  exit 0
fi
mkdir -p "$out"
rm -f "$out/.stamp"
. "$root/hack/stage.sh"
# The tags leave out what needs cgo (btrfs, devicemapper) or a C library
# (gpgme: the pure-Go OpenPGP instead; ostree), as CRI-O's own static
# builds do; seccomp needs cgo and libseccomp, and stays off.
tags="containers_image_openpgp containers_image_ostree_stub exclude_graphdriver_btrfs exclude_graphdriver_devicemapper"
build() {
  cd "$here"
  CGO_ENABLED=0 go build -trimpath -tags "$tags" -ldflags "-s -w" -o "$out/crio" "$mod/cmd/crio"
  src=$(go list -m -f '{{.Dir}}' "$mod")/pinns/src
  gcc -std=c99 -Os -Wall -Wextra -static -o "$out/pinns" "$src"/*.c
}
stage "building CRI-O $version into $out" "about 1 min warm, several cold on 2 cores, cached after" build
echo "$stamp" > "$out/.stamp"
