package localcluster

import (
	"context"
	"fmt"
	"os/exec"
	"time"
)

// RestartContainerd stops the containerd of the node named node (SIGTERM,
// SIGKILL after a grace period) and starts it again as Up does, waiting
// until it answers on its socket. Running containers survive through their
// shims; the kubelet and NRI plugins reconnect to the new process on their
// own.
func (c *Cluster) RestartContainerd(ctx context.Context, node string) error {
	var n *nodeLayout
	for i := range c.layout.Nodes {
		if c.layout.Nodes[i].Name == node {
			n = &c.layout.Nodes[i]
		}
	}
	if n == nil {
		return fmt.Errorf("cluster %q: restart containerd: no node %q", c.Name, node)
	}
	name := "containerd-" + n.Dir
	rec, err := c.record(name)
	if err != nil {
		return fmt.Errorf("cluster %q: restart containerd of %q: %w", c.Name, node, err)
	}
	if err := stopProcess(rec, 10*time.Second); err != nil {
		return fmt.Errorf("cluster %q: stop containerd of %q: %w", c.Name, node, err)
	}
	containerd, err := ContainerdCommand(c.root, c.Runtime)
	if err != nil {
		return fmt.Errorf("cluster %q: %w", c.Name, err)
	}
	p := pathsOf(c.Dir, *n)
	if _, err := startProcess(c.Dir, name, n.NetNS, []string{containerd, "--config", p.CRIConfig}); err != nil {
		return fmt.Errorf("cluster %q: start containerd of %q again: %w", c.Name, node, err)
	}
	return waitFor(ctx, 30*time.Second, "containerd socket "+p.CRISocket, func() error {
		return exec.CommandContext(ctx, "ctr", "--address", p.CRISocket, "version").Run()
	})
}

// record is the recorded process called name, which must be alive.
func (c *Cluster) record(name string) (procRecord, error) {
	recs, err := readRecords(c.Dir)
	if err != nil {
		return procRecord{}, err
	}
	for _, r := range recs {
		if r.Name == name {
			if !r.alive() {
				return procRecord{}, fmt.Errorf("%s (pid %d) is not running", name, r.PID)
			}
			return r, nil
		}
	}
	return procRecord{}, fmt.Errorf("no recorded process %s in %s", name, c.Dir)
}
