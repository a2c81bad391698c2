package localcluster

import (
	"context"
	"fmt"
)

// checkSocketPaths refuses a cluster whose node sockets do not fit a
// unix socket address: connect(2) takes at most 107 bytes of path, and
// containerd adds ".ttrpc" for its second socket.
func (c *Cluster) checkSocketPaths() error {
	for _, n := range c.Nodes {
		if len(n.CRISocket)+len(".ttrpc") > maxSocketPath {
			return fmt.Errorf("containerd socket %q of node %q: path of %d bytes too long for a unix socket (limit %d with \".ttrpc\"): use a shorter repository path or cluster name",
				n.CRISocket, n.Name, len(n.CRISocket), maxSocketPath)
		}
		if c.Runtime == RuntimeContainerd2 && len(n.NRISocket) > maxSocketPath {
			return fmt.Errorf("NRI socket %q of node %q: path of %d bytes too long for a unix socket (limit %d): use a shorter repository path or cluster name",
				n.NRISocket, n.Name, len(n.NRISocket), maxSocketPath)
		}
	}
	return nil
}

// ensureRuntime returns the containerd command the nodes run, building
// containerd 2 first when the cluster runs on it (cached by the pin).
func (c *Cluster) ensureRuntime(ctx context.Context) (string, error) {
	if c.Runtime == RuntimeContainerd2 {
		c.step("building containerd 2 (hack/containerd2, only when its pin changed)")
		if err := BuildContainerd2(ctx, c.root, c.log); err != nil {
			return "", err
		}
	}
	cmd, err := ContainerdCommand(c.root, c.Runtime)
	if err != nil {
		return "", fmt.Errorf("cluster %q: %w", c.Name, err)
	}
	c.step(fmt.Sprintf("nodes run %s (%s)", c.Runtime, cmd))
	return cmd, nil
}
