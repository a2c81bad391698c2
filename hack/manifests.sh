#!/usr/bin/env bash
# Generates every manifest that comes from Go markers: the CRDs from
# api/v1alpha1, and one ClusterRole per component from the +kubebuilder:rbac
# markers in its package. Never edit the generated files by hand.
set -euo pipefail
cd "$(dirname "$0")/.."
# MANIFESTS_OUT lets deploy/generated_test.go regenerate into a scratch folder
# and compare, so stale manifests fail `make test`.
out=${MANIFESTS_OUT:-deploy}
cg="go tool controller-gen"
[ -n "${MANIFESTS_OUT:-}" ] || $cg object paths=./api/...
$cg crd paths=./api/... output:crd:artifacts:config=$out/crd
# MultiNetworkPolicy's CRD from the upstream types podnet reads
# (k8snetworkplumbingwg/multi-networkpolicy): installed only where absent.
mkdir -p $out/crd/multinetworkpolicy
$cg crd paths=github.com/k8snetworkplumbingwg/multi-networkpolicy/pkg/apis/k8s.cni.cncf.io/v1beta1 output:crd:artifacts:config=$out/crd/multinetworkpolicy
for c in webhook agent controller; do
  if ls $c/*.go >/dev/null 2>&1; then
    $cg rbac:roleName=podnet-$c paths=./$c/... output:rbac:artifacts:config=$out/rbac/$c
  fi
done
# The MutatingWebhookConfiguration from the +kubebuilder:webhook marker in
# webhook/config.go (its patch= carries namespaceSelector and matchConditions).
if ls webhook/*.go >/dev/null 2>&1; then
  $cg webhook paths=./webhook/... output:webhook:artifacts:config=$out/webhook
fi
