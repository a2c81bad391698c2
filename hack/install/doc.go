// Package install puts cert-manager and podnet onto a local cluster
// (hack/localcluster) the way a user would: it builds the images, imports
// them into every node, installs cert-manager from hack/cert-manager, then
// runs hack/deploy.sh (`make deploy`), which applies deploy/ with kubectl.
// `make demo` and the e2e suite share it.
//
// It must not install anything by a path a user would not take: no
// hand-made certificates, no objects created through client-go that the
// manifests should carry, no shortcuts around kubectl apply.
package install
