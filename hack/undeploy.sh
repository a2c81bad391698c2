#!/usr/bin/env bash
# `make undeploy`: takes podnet off the cluster $KUBECONFIG points at, with
# pods running.
#
#  1. `podnet-controller uninstall` puts the uninstall mark on the agent's
#     DaemonSet and waits until every node's agent has detached podnet's
#     networks from the pods of its node (they keep running on their
#     primary network), released their addresses and removed what podnet
#     made on the node; then it clears podnet's Node annotations.
#  2. kubectl delete of the objects of $DEPLOY (default: deploy/; any
#     overlay of it deletes the same objects), keeping the CRDs, and with
#     them the admins' NetworkProfiles, unless DELETE_CRDS=1.
#
# UNINSTALL_TIMEOUT bounds step 1 (default 5m); when it runs out, the nodes
# whose agent did not report are named and nothing is deleted.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${KUBECONFIG:?set KUBECONFIG to the cluster to take podnet off}"
export KUBECONFIG
kubectl=${KUBECTL:-kubectl}
dir=${DEPLOY:-deploy}
ns=${NAMESPACE:-podnet-system}

go run ./cmd/podnet-controller uninstall --kubeconfig "$KUBECONFIG" \
  --namespace "$ns" --timeout "${UNINSTALL_TIMEOUT:-5m}"

manifests=$(mktemp)
trap 'rm -f "$manifests"' EXIT
$kubectl kustomize "$dir" > "$manifests"
if [ "${DELETE_CRDS:-}" != 1 ]; then
  # Drop the CustomResourceDefinitions from the list of documents.
  awk '
    function flush() { if (doc != "" && doc !~ /\nkind: CustomResourceDefinition\n/) printf "---%s\n", doc; doc = "" }
    /^---$/ { flush(); next }
    { doc = doc "\n" $0 }
    END { flush() }
  ' "$manifests" > "$manifests.keep"
  mv "$manifests.keep" "$manifests"
  echo "undeploy: keeping the CRDs and NetworkProfiles (DELETE_CRDS=1 deletes them)"
fi
$kubectl delete --ignore-not-found --wait=true -f "$manifests"
echo "undeploy: podnet is gone"
