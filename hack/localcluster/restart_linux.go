package localcluster

import (
	"context"
	"fmt"
	"time"
)

// RestartRuntime stops the container runtime of the node named node
// (SIGTERM, SIGKILL after a grace period) and starts it again as Up does,
// waiting until it answers CRI. Running containers survive through their
// shims (containerd) or conmon (CRI-O); the kubelet and NRI plugins
// reconnect to the new process on their own.
func (c *Cluster) RestartRuntime(ctx context.Context, node string) error {
	var n *nodeLayout
	for i := range c.layout.Nodes {
		if c.layout.Nodes[i].Name == node {
			n = &c.layout.Nodes[i]
		}
	}
	if n == nil {
		return fmt.Errorf("cluster %q: restart containerd: no node %q", c.Name, node)
	}
	name := runtimeProcess(*n)
	rec, err := c.record(name)
	if err != nil {
		return fmt.Errorf("cluster %q: restart the runtime of %q: %w", c.Name, node, err)
	}
	if err := stopProcess(rec, 10*time.Second); err != nil {
		return fmt.Errorf("cluster %q: stop the runtime of %q: %w", c.Name, node, err)
	}
	command, err := RuntimeCommand(c.root, c.Runtime)
	if err != nil {
		return fmt.Errorf("cluster %q: %w", c.Name, err)
	}
	if err := c.startRuntime(ctx, command, *n); err != nil {
		return fmt.Errorf("cluster %q: start the runtime of %q again: %w", c.Name, node, err)
	}
	return nil
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
