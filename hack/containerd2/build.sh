#!/usr/bin/env bash
# Builds containerd 2 (the daemon and its runc shim), pinned in this
# folder's module (go.mod, tools.go), into _output/containerd2/bin. It
# rebuilds only when the pin (go.mod, go.sum) or this script changes, so a
# warm cluster start or `make test` costs nothing here. runc stays
# Debian's. The local cluster (localcluster Options.Runtime "containerd2")
# and the CRI tests run containerd from there.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${CONTAINERD2_BIN_DIR:-$root/_output/containerd2/bin}
mod=github.com/containerd/containerd/v2
version=$(awk -v m="$mod" '($1=="require" && $2==m) || $1==m {print ($1=="require" ? $3 : $2)}' "$here/go.mod")
stamp=$( (cat "$here/go.mod" "$here/go.sum" "$0") | sha256sum | cut -c1-16)
if [ -f "$out/.stamp" ] && [ "$(cat "$out/.stamp")" = "$stamp" ]; then
  exit 0
fi
mkdir -p "$out"
rm -f "$out/.stamp"
. "$root/hack/stage.sh"
# The version lands where `containerd --version` and the CRI's Version
# answer read it; btrfs, devmapper and zfs need cgo and are not used here.
ldflags="-s -w -X $mod/version.Version=$version -X $mod/version.Revision=module"
build() {
  cd "$here"
  for c in containerd containerd-shim-runc-v2; do
    CGO_ENABLED=0 go build -trimpath -tags "no_btrfs no_devmapper no_zfs" -ldflags "$ldflags" -o "$out/$c" "$mod/cmd/$c"
  done
}
stage "building containerd $version into $out" "about 2 min cold on 2 cores, cached after" build
echo "$stamp" > "$out/.stamp"
