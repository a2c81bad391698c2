#!/usr/bin/env bash
# Generates every manifest that comes from Go markers: the CRDs from
# api/v1alpha1, and one ClusterRole per component from the +kubebuilder:rbac
# markers in its package. Never edit the generated files by hand.
set -euo pipefail
cd "$(dirname "$0")/.."
cg="go tool controller-gen"
$cg object paths=./api/...
$cg crd paths=./api/... output:crd:artifacts:config=deploy/crd
for c in webhook agent; do
  if ls $c/*.go >/dev/null 2>&1; then
    $cg rbac:roleName=podnet-$c paths=./$c/... output:rbac:artifacts:config=deploy/rbac/$c
  fi
done
