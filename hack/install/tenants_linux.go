package install

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// SystemNamespaces are kept by RemoveTenants: the cluster's own, podnet's
// and cert-manager's.
var SystemNamespaces = []string{"default", "kube-system", "kube-public", "kube-node-lease", "podnet-system", "cert-manager"}

// RemoveTenants removes what earlier users of the cluster left for tenants:
// every namespace but SystemNamespaces (their pods detach, their claims go
// with them) and, when podnet's CRD is installed, every NetworkProfile. It
// waits until they are gone, so the next user of a shared cluster starts
// on the install alone.
func (in *Installer) RemoveTenants(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 4*time.Minute)
	defer cancel()
	if err := in.deleteEach(ctx, "namespaces", func(ns string) bool { return !slices.Contains(SystemNamespaces, ns) }); err != nil {
		return err
	}
	crds, err := in.KubectlOutput(ctx, "get", "crd", "-o", "name")
	if err != nil {
		return fmt.Errorf("cluster %q: list CRDs: %w", in.Cluster.Name, err)
	}
	if !slices.Contains(strings.Fields(crds), "customresourcedefinition.apiextensions.k8s.io/networkprofiles.podnet.io") {
		return nil
	}
	return in.deleteEach(ctx, "networkprofiles.podnet.io", func(string) bool { return true })
}

// deleteEach deletes the objects of kind (cluster-scoped) whose names drop
// says to, and waits until they are gone.
func (in *Installer) deleteEach(ctx context.Context, kind string, drop func(name string) bool) error {
	out, err := in.KubectlOutput(ctx, "get", kind, "-o", "name")
	if err != nil {
		return fmt.Errorf("cluster %q: list %s: %w", in.Cluster.Name, kind, err)
	}
	var gone []string
	for _, o := range strings.Fields(out) {
		if _, name, _ := strings.Cut(o, "/"); drop(name) {
			gone = append(gone, o)
		}
	}
	if len(gone) == 0 {
		return nil
	}
	if err := in.KubectlRun(ctx, append([]string{"delete", "--wait=true", "--timeout=3m"}, gone...)...); err != nil {
		return fmt.Errorf("cluster %q: delete what an earlier user left: %w", in.Cluster.Name, err)
	}
	return nil
}
