package nodecarry

import (
	"compress/gzip"
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
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

// TestRootWatchReportsLinkAndAddressChanges: a NIC that appears, is
// renamed or goes in the node's netns, and an address that comes, are
// each reported by name (the old name too after a rename), so that the
// labeler can probe for the ones a need names.
func TestRootWatchReportsLinkAndAddressChanges(t *testing.T) {
	netnstest.RequireRoot(t)
	name, path := netnstest.NewNetNS(t, "pncarry", "watch")
	ctx, cancel := context.WithCancel(context.Background())
	changes := make(chan Change, 256)
	done := make(chan error, 1)
	go func() {
		done <- NetlinkHost{NetNS: path}.Watch(ctx, func(c Change) { changes <- c })
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("watch: %v", err)
		}
	})
	// waitFor pokes until a change that ok accepts is seen: the first
	// poke may come before the subscription is in place.
	waitFor := func(what string, poke func(), ok func(Change) bool) {
		t.Helper()
		deadline := time.After(30 * time.Second)
		poked := false
		for {
			if !poked || poke == nil {
				if poke != nil {
					poke()
				}
				poked = true
			}
			select {
			case c := <-changes:
				if ok(c) {
					return
				}
			case <-deadline:
				t.Fatalf("no change reported after %s", what)
			case <-time.After(200 * time.Millisecond):
				poked = false // poke again
			}
		}
	}
	links := func(want ...string) func(Change) bool {
		return func(c Change) bool { return slices.Equal(c.Links, want) }
	}
	waitFor("lo mtu", func() { netnstest.Run(t, "ip", "-n", name, "link", "set", "lo", "mtu", "65000") }, links("lo"))
	once := func(f func()) func() {
		done := false
		return func() {
			if !done {
				f()
				done = true
			}
		}
	}
	waitFor("data1 added", once(func() {
		netnstest.Run(t, "ip", "-n", name, "link", "add", "data1", "type", "veth", "peer", "name", "data1p")
	}), links("data1"))
	waitFor("data1 renamed data2", once(func() {
		netnstest.Run(t, "ip", "-n", name, "link", "set", "data1", "name", "data2")
	}), links("data2", "data1"))
	waitFor("address added", once(func() {
		netnstest.Run(t, "ip", "-n", name, "addr", "add", "192.0.2.7/24", "dev", "data2")
	}), func(c Change) bool { return c.Address == netip.MustParseAddr("192.0.2.7") })
	waitFor("data2 removed", once(func() {
		netnstest.Run(t, "ip", "-n", name, "link", "del", "data2")
	}), links("data2"))
}

// TestRootProbeFindsFreeNICs: with a hostDevice network among the needs,
// the probe lists the node's free NICs that its selector may match, by the
// dataplane's own rule: a NIC that carries an address is not free, and the
// need is satisfied only while a free one is there; the watch says when a
// NIC leaves the node.
func TestRootProbeFindsFreeNICs(t *testing.T) {
	netnstest.RequireRoot(t)
	name, path := netnstest.NewNetNS(t, "pncarry", "nics")
	other, _ := netnstest.NewNetNS(t, "pncarry", "away")
	netnstest.Run(t, "ip", "-n", name, "link", "add", "nic0", "type", "veth", "peer", "name", "wire0")
	netnstest.Run(t, "ip", "-n", name, "link", "add", "nic1", "type", "veth", "peer", "name", "wire1")
	netnstest.Run(t, "ip", "-n", name, "addr", "add", "192.0.2.11/24", "dev", "nic1")
	needs := carry.Needs(&v1alpha1.Network{Name: "n", HostDevice: &v1alpha1.HostDeviceNetwork{Names: []string{"nic*"}}})
	if len(needs) != 1 || needs[0].What != carry.NeedHostDevice || !needs[0].Consumed() {
		t.Fatalf("needs of a hostDevice network: %+v", needs)
	}
	host := NetlinkHost{NetNS: path, Modules: fakeModules(t)}
	have, err := host.Probe(context.Background(), needs)
	if err != nil {
		t.Fatal(err)
	}
	if len(have.NICs) != 1 || have.NICs[0].Name != "nic0" || have.NICs[0].Driver != "veth" || !have.Has(needs[0]) {
		t.Fatalf("free NICs %+v; want only nic0 (veth), nic1 carries an address", have.NICs)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	changes := make(chan Change, 64)
	go func() { _ = host.Watch(ctx, func(c Change) { changes <- c }) }()
	time.Sleep(200 * time.Millisecond)
	netnstest.Run(t, "ip", "-n", name, "link", "set", "nic0", "netns", other)
	deadline := time.After(10 * time.Second)
	for touched := false; !touched; {
		select {
		case c := <-changes:
			touched = touches(needs, c)
		case <-deadline:
			t.Fatal("the watch did not say that nic0 left")
		}
	}
	if have, err = host.Probe(context.Background(), needs); err != nil || have.Has(needs[0]) {
		t.Fatalf("after nic0 left: NICs %+v, %v; want the need unsatisfied", have.NICs, err)
	}
}
