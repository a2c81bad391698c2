// Command helmchart generates podnet's Helm chart (deploy/helm/podnet) from
// the same source as deploy/: it renders deploy/default and the overlays of
// the other hold modes (deploy/overlays/attach-at-sandbox-setup,
// deploy/overlays/hold-with-nri, deploy/overlays/hold-with-wait-container)
// with kustomize, turns the fields
// an admin sets (images, the mode of holding pods, key secrets, resources,
// placement, the runtime socket) into template expressions whose defaults
// are the values deploy/ has, and adds the few files that are Helm's own
// (Chart.yaml, helpers, the approval key Secrets, optional monitoring).
//
//	go run ./hack/helmchart -out deploy/helm/podnet
//
// `make chart` (and `make manifests`) runs it; its test fails when the
// committed chart is stale or renders other objects than kustomize. The
// chart is never edited by hand: change deploy/ or this generator.
package main
