package nodecarry

import (
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/carry"
	"podnet.io/podnet/test/netnstest"
)

// fakeModules lays out a kernel's module records in a temporary folder:
// macvlan loaded, ipvlan loadable, wireguard in the config only.
func fakeModules(t *testing.T) Modules {
	dir := t.TempDir()
	m := Modules{SysModule: filepath.Join(dir, "sys"), LibModules: filepath.Join(dir, "lib"), Config: filepath.Join(dir, "config.gz")}
	for _, d := range []string{filepath.Join(m.SysModule, "macvlan"), m.LibModules} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(m.LibModules, "modules.dep"), []byte("kernel/drivers/net/ipvlan/ipvlan.ko.xz:\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(m.Config)
	if err != nil {
		t.Fatal(err)
	}
	z := gzip.NewWriter(f)
	if _, err := z.Write([]byte("CONFIG_WIREGUARD=m\n# CONFIG_VXLAN is not set\nCONFIG_VLAN_8021Q=n\n")); err != nil {
		t.Fatal(err)
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestRootProbeSeesTheNodesLinksAddressesAndModules probes a throwaway
// netns with real netlink: a NIC made there is seen, one that is not is
// not, and the module records decide the modules.
func TestRootProbeSeesTheNodesLinksAddressesAndModules(t *testing.T) {
	netnstest.RequireRoot(t)
	name, path := netnstest.NewNetNS(t, "pncarry", "probe")
	netnstest.Run(t, "ip", "-n", name, "link", "add", "data0", "type", "veth", "peer", "name", "data0p")
	netnstest.Run(t, "ip", "-n", name, "addr", "add", "192.0.2.10/24", "dev", "data0")
	host := NetlinkHost{NetNS: path, Modules: fakeModules(t)}
	have, err := host.Probe(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !have.Links["data0"] || !have.Links["data0p"] || have.Links["data1"] {
		t.Errorf("links = %v, want data0 and data0p, not data1", have.Links)
	}
	if !have.Has(carry.Need{What: carry.NeedAddress, Name: "192.0.2.10"}) {
		t.Errorf("addresses = %v, want 192.0.2.10", have.Addresses)
	}
	want := map[string]bool{"macvlan": true, "ipvlan": true, "wireguard": true}
	if len(have.Modules) != len(want) {
		t.Errorf("modules = %v, want %v", have.Modules, want)
	}
	for m := range want {
		if !have.Modules[m] {
			t.Errorf("modules = %v, want %v", have.Modules, want)
		}
	}
	on := func(master string) *v1alpha1.Network {
		return &v1alpha1.Network{Name: "n", Macvlan: &v1alpha1.MacvlanNetwork{Master: master}}
	}
	if !carry.Carries(have, on("data0")) || carry.Carries(have, on("data1")) {
		t.Errorf("carries data0 %v (want true), data1 %v (want false)", carry.Carries(have, on("data0")), carry.Carries(have, on("data1")))
	}
}

// TestRootWatchKicksOnLinkChanges: a NIC that appears or goes in the
// node's netns asks for a probe.
func TestRootWatchKicksOnLinkChanges(t *testing.T) {
	netnstest.RequireRoot(t)
	name, path := netnstest.NewNetNS(t, "pncarry", "watch")
	ctx, cancel := context.WithCancel(context.Background())
	kicks := make(chan struct{}, 64)
	done := make(chan error, 1)
	go func() {
		done <- NetlinkHost{NetNS: path}.Watch(ctx, func() { kicks <- struct{}{} })
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("watch: %v", err)
		}
	})
	// The subscription is in place once a change made after it is seen:
	// poke lo until one is.
	waitKick := func(what string, poke func()) {
		t.Helper()
		deadline := time.After(30 * time.Second)
		for {
			poke()
			select {
			case <-kicks:
				return
			case <-deadline:
				t.Fatalf("no kick after %s", what)
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	waitKick("lo mtu", func() { netnstest.Run(t, "ip", "-n", name, "link", "set", "lo", "mtu", "65000") })
	drain := func() {
		for {
			select {
			case <-kicks:
			case <-time.After(300 * time.Millisecond):
				return
			}
		}
	}
	drain()
	added := false
	waitKick("data1 added", func() {
		if !added {
			netnstest.Run(t, "ip", "-n", name, "link", "add", "data1", "type", "veth", "peer", "name", "data1p")
			added = true
		}
	})
	drain()
	removed := false
	waitKick("data1 removed", func() {
		if !removed {
			netnstest.Run(t, "ip", "-n", name, "link", "del", "data1")
			removed = true
		}
	})
}
