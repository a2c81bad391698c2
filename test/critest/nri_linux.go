package critest

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	agentnri "podnet.io/podnet/agent/nri"
	"podnet.io/podnet/hack/localcluster"
	"podnet.io/podnet/test/testenv"
)

// NRISocket is the runtime's NRI socket (a runtime that serves NRI).
func (c *CRI) NRISocket() string {
	return filepath.Join(filepath.Dir(c.Socket), localcluster.NodeNRISocket)
}

// ConnectNRI registers podnet's NRI plugin p with the runtime on its NRI
// socket, waits until it is connected, and stops it when the test ends.
func (c *CRI) ConnectNRI(t testing.TB, p *agentnri.Plugin) {
	t.Helper()
	p.Socket = c.NRISocket()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = p.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	testenv.Eventually(t, 30*time.Second, "podnet's NRI plugin connected", func(context.Context) error {
		if !p.Connected() {
			return fmt.Errorf("not connected to %s", p.Socket)
		}
		return nil
	})
}
