#!/usr/bin/env bash
# Builds the helm command pinned in this folder's go.mod into
# _output/helm/bin/helm (HELM_BIN_DIR elsewhere). It rebuilds only when the
# pin (go.mod, go.sum) or this script changes; `make helm` and the chart
# tests call it, so a warm run costs nothing here.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${HELM_BIN_DIR:-$root/_output/helm/bin}
version=$(awk '$1=="require" && $2 ~ /^helm\.sh\/helm\// {print $3}' "$here/go.mod")
module=$(awk '$1=="require" && $2 ~ /^helm\.sh\/helm\// {print $2}' "$here/go.mod")
stamp=$(cat "$here/go.mod" "$here/go.sum" "$0" | sha256sum | cut -c1-16)

if [ -x "$out/helm" ] && [ -f "$out/.stamp" ] && [ "$(cat "$out/.stamp")" = "$stamp" ]; then
  exit 0
fi
mkdir -p "$out"
rm -f "$out/.stamp"
# helm reports this version (`helm version`) as its release build does.
ldflags="-s -w -X $module/internal/version.version=$version -X $module/internal/version.metadata="
ldflags="$ldflags -X $module/internal/version.gitTreeState=clean"
. "$root/hack/stage.sh"
cd "$here"
stage "building helm $version into $out" "about 2 min cold on 2 cores, cached after" \
  env CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$out/helm" "$module/cmd/helm"
echo "$stamp" > "$out/.stamp"
