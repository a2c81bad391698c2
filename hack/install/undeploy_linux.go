package install

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"podnet.io/podnet/hack/localcluster"
)

// Undeploy runs hack/undeploy.sh (`make undeploy`) against the cluster:
// the uninstall step, then the deletion of podnet's objects; the CRDs
// stay unless deleteCRDs.
func (in *Installer) Undeploy(ctx context.Context, deleteCRDs bool) error {
	env := []string{
		"KUBECTL=" + in.Kubectl(),
		"PATH=" + localcluster.BinDir(in.Root) + ":" + os.Getenv("PATH"),
	}
	if deleteCRDs {
		env = append(env, "DELETE_CRDS=1")
	}
	if err := in.run(ctx, env, filepath.Join(in.Root, "hack", "undeploy.sh")); err != nil {
		return fmt.Errorf("make undeploy: %w", err)
	}
	return nil
}
