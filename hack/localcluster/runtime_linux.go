package localcluster

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// checkSocketPaths refuses a cluster whose node sockets do not fit a
// unix socket address: connect(2) takes at most 107 bytes of path, and
// containerd adds ".ttrpc" for its second socket.
func (c *Cluster) checkSocketPaths() error {
	for _, n := range c.Nodes {
		if len(n.CRISocket)+len(".ttrpc") > maxSocketPath {
			return fmt.Errorf("CRI socket %q of node %q: path of %d bytes too long for a unix socket (limit %d with \".ttrpc\"): use a shorter repository path or cluster name",
				n.CRISocket, n.Name, len(n.CRISocket), maxSocketPath)
		}
		if ServesNRI(c.Runtime) && len(n.NRISocket) > maxSocketPath {
			return fmt.Errorf("NRI socket %q of node %q: path of %d bytes too long for a unix socket (limit %d): use a shorter repository path or cluster name",
				n.NRISocket, n.Name, len(n.NRISocket), maxSocketPath)
		}
	}
	return nil
}

// ensureRuntime returns the runtime command the nodes run, building it
// first when it is built from a pin (cached by the pin).
func (c *Cluster) ensureRuntime(ctx context.Context) (string, error) {
	c.step(fmt.Sprintf("building runtime %s (only when its pin changed)", c.Runtime))
	if err := BuildRuntime(ctx, c.root, c.Runtime, c.log); err != nil {
		return "", err
	}
	cmd, err := RuntimeCommand(c.root, c.Runtime)
	if err != nil {
		return "", fmt.Errorf("cluster %q: %w", c.Name, err)
	}
	c.step(fmt.Sprintf("nodes run %s (%s)", c.Runtime, cmd))
	return cmd, nil
}

// runtimePaths are where node n's runtime keeps everything.
func (c *Cluster) runtimePaths(n nodeLayout) RuntimePaths {
	p := pathsOf(c.Dir, n)
	return RuntimePaths{Dir: p.CRIDir, Socket: p.CRISocket, RuncRoot: p.RuncRoot, CNIConfDir: p.CNIConfDir,
		CNIBinDir: c.CNIBinDir(), NRISocket: p.NRISocket, NRIDefaultValidator: c.NRIDefaultValidator, NRITolerateAnnotation: c.NRITolerateAnnotation,
		StorageDir: StorageDirOf(c.root, c.Name, n.Dir)}
}

// runtimeProcess is the recorded name of node n's runtime process.
func runtimeProcess(n nodeLayout) string { return "runtime-" + n.Dir }

// startRuntime starts node n's runtime (command) in the node's netns and
// waits until it answers CRI.
func (c *Cluster) startRuntime(ctx context.Context, command string, n nodeLayout) error {
	p := pathsOf(c.Dir, n)
	if _, err := startProcess(c.Dir, runtimeProcess(n), n.NetNS, []string{command, "--config", p.CRIConfig}); err != nil {
		return err
	}
	return WaitCRI(ctx, p.CRISocket, 60*time.Second)
}

// WaitCRI waits until the runtime at socket answers a CRI Version call:
// the same question for every runtime.
func WaitCRI(ctx context.Context, socket string, timeout time.Duration) error {
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("CRI socket %s: %w", socket, err)
	}
	defer conn.Close()
	rt := runtimeapi.NewRuntimeServiceClient(conn)
	return waitFor(ctx, timeout, "CRI on "+socket, func() error {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_, err := rt.Version(ctx, &runtimeapi.VersionRequest{})
		return err
	})
}
