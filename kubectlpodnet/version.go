package kubectlpodnet

import (
	"fmt"

	"github.com/spf13/cobra"

	"podnet.io/podnet/pkg/version"
)

// versionCommand prints the release the plugin was built from; it needs
// no cluster.
func (o *options) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "The podnet release this plugin was built from",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(o.out, version.String("kubectl-podnet"))
			return err
		},
	}
}
