package cluster

import (
	"os"
	"path/filepath"
	"testing"

	"podnet.io/podnet/hack/localcluster"
)

// checkNRISockets: on containerd 2 and CRI-O every node serves NRI on a socket of
// its own, in its own folder (an NRI plugin of one node must never talk
// to another node's runtime); containerd 1.6 has no NRI and serves none.
func checkNRISockets(t *testing.T, c *localcluster.Cluster) {
	t.Helper()
	seen := map[string]string{}
	for _, n := range c.Nodes {
		if want := filepath.Join(c.Dir, n.Name, localcluster.NodeNRISocket); n.NRISocket != want {
			t.Errorf("node %s: NRI socket %q, want %q in its folder", n.Name, n.NRISocket, want)
		}
		st, err := os.Stat(n.NRISocket)
		if !localcluster.ServesNRI(c.Runtime) {
			if err == nil {
				t.Errorf("node %s on %s: something serves %s", n.Name, c.Runtime, n.NRISocket)
			}
			continue
		}
		if err != nil || st.Mode()&os.ModeSocket == 0 {
			t.Errorf("node %s on %s: no NRI socket at %s: %v", n.Name, c.Runtime, n.NRISocket, err)
		}
		if other, ok := seen[n.NRISocket]; ok {
			t.Errorf("nodes %s and %s share the NRI socket %s", other, n.Name, n.NRISocket)
		}
		seen[n.NRISocket] = n.Name
	}
}
