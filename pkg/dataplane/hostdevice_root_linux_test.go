package dataplane

import (
	"context"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"podnet.io/podnet/pkg/nldump"
)

// standInNIC makes a node link that stands in for a NIC: one end of a veth
// pair whose other end (name+"w") stays on the node as the wire, with
// wireAddr on it.
func standInNIC(t *testing.T, node, name, mtu, wireAddr string) net.HardwareAddr {
	t.Helper()
	run(t, "ip", "-n", node, "link", "add", name, "mtu", mtu, "type", "veth", "peer", "name", name+"w", "mtu", mtu)
	run(t, "ip", "-n", node, "link", "set", name+"w", "up")
	if wireAddr != "" {
		run(t, "ip", "-n", node, "addr", "add", wireAddr, "dev", name+"w")
	}
	return mustLink(t, node, name).Attrs().HardwareAddr
}

// requireOnNode asserts that a NIC is on the node as it was: its name,
// MTU, MAC and state, no alias, no origin, no address but link-local.
func requireOnNode(t *testing.T, node, name string, mtu int, mac net.HardwareAddr, up bool) {
	t.Helper()
	l := mustLink(t, node, name)
	a := l.Attrs()
	if a.MTU != mtu || a.HardwareAddr.String() != mac.String() || (a.Flags&net.FlagUp != 0) != up || a.Alias != "" || len(a.AltNames) != 0 {
		t.Fatalf("NIC %s on the node: mtu %d mac %s flags %v alias %q altnames %v; want mtu %d mac %s up=%t, no alias, no altname",
			name, a.MTU, a.HardwareAddr, a.Flags, a.Alias, a.AltNames, mtu, mac, up)
	}
	addrs, err := nldump.Addrs(handle(t, node), l, netlink.FAMILY_ALL)
	if err != nil {
		t.Fatal(err)
	}
	for _, ad := range addrs {
		if !kernelLinkLocal(ad) {
			t.Fatalf("NIC %s came back with address %s", name, ad.IPNet)
		}
	}
}

func TestRootHostDevice(t *testing.T) {
	d, node := newNode(t)
	mac0 := standInNIC(t, node, "hd0", "9000", "192.168.70.254/24")
	run(t, "ip", "-n", node, "link", "set", "hd0", "up")
	mac1 := standInNIC(t, node, "hd1", "1500", "")
	// hd2 matches the pattern but carries an address: the node uses it.
	standInNIC(t, node, "hd2", "1500", "")
	run(t, "ip", "-n", node, "addr", "add", "10.99.0.1/24", "dev", "hd2")
	hostDevice := func(addr string, names ...string) []Interface {
		ifc := Interface{Name: "net1", Kind: KindHostDevice, Devices: &DeviceSelector{Names: names}}
		if addr != "" {
			ifc.Addresses = []net.IPNet{cidr(t, addr)}
		}
		return []Interface{ifc}
	}
	nsA, a := newPod(t)
	nsB, b := newPod(t)
	nsC, c := newPod(t)
	ctx := context.Background()

	t.Run("TakenWhole", func(t *testing.T) {
		a.Interfaces = hostDevice("192.168.70.1/24", "hd?")
		a.Interfaces[0].MTU = 1400
		st := apply(t, d, a)
		if len(st) != 1 || st[0].MTU != 1400 || st[0].MAC != mac0.String() {
			t.Fatalf("pod A's status %+v; want hd0's MAC %s and MTU 1400", st, mac0)
		}
		l := mustLink(t, nsA, "net1")
		if l.Attrs().Alias != "podnet:net1" || l.Attrs().Flags&net.FlagUp == 0 {
			t.Fatalf("net1 in pod A: alias %q flags %v", l.Attrs().Alias, l.Attrs().Flags)
		}
		if slices.Contains(linkNames(t, node), "hd0") {
			t.Fatal("hd0 is still on the node")
		}
		if !ping(t, nsA, "192.168.70.254") {
			t.Fatal("pod A cannot reach the wire through its NIC")
		}
		requireIdempotent(t, d, a, nsA, node)
	})

	t.Run("OnePodAtATime", func(t *testing.T) {
		b.Interfaces = hostDevice("", "hd?")
		if st := apply(t, d, b); len(st) != 1 || st[0].MAC != mac1.String() || st[0].MTU != 1500 {
			t.Fatalf("pod B's status %+v; want hd1 (%s)", st, mac1)
		}
		c.Interfaces = hostDevice("", "hd?")
		_, err := d.Apply(ctx, c)
		requireMentions(t, err, `"net1"`, "no free host device", "hd2 (carries addresses)")
		if got := linkNames(t, nsC); len(got) != 0 {
			t.Fatalf("pod C holds %v after its refusal", got)
		}
		if !slices.Contains(linkNames(t, node), "hd2") {
			t.Fatal("hd2, busy, left the node")
		}
	})

	t.Run("GivenBackOnDetach", func(t *testing.T) {
		if err := d.Detach(ctx, a.UID, a.NetNS); err != nil {
			t.Fatal(err)
		}
		requireOnNode(t, node, "hd0", 9000, mac0, true)
		if got := linkNames(t, nsA); len(got) != 0 {
			t.Fatalf("pod A after detach: %v", got)
		}
	})

	t.Run("NarrowedSelectorSwapsTheNIC", func(t *testing.T) {
		b.Interfaces = hostDevice("", "hd0")
		if st := apply(t, d, b); len(st) != 1 || st[0].MAC != mac0.String() || st[0].MTU != 9000 {
			t.Fatalf("pod B's status %+v; want hd0 (%s) with its own MTU 9000 once only hd0 is selected", st, mac0)
		}
		requireOnNode(t, node, "hd1", 1500, mac1, false)
		requireIdempotent(t, d, b, nsB, node)
	})

	t.Run("StrandedIsRestored", func(t *testing.T) {
		// What the kernel does with a physical NIC when its pod's
		// netns goes without podnet: back to the node as dev<ifindex>.
		run(t, "ip", "-n", nsB, "link", "set", "net1", "netns", node, "name", "dev77")
		// The node's periodic sweep finds it.
		restored, err := d.CollectGarbage(ctx, func(string) bool { return true })
		if err != nil || !slices.Equal(restored, []string{"hd0"}) {
			t.Fatalf("CollectGarbage = %v, %v; want [hd0] restored", restored, err)
		}
		requireOnNode(t, node, "hd0", 9000, mac0, true)
	})

	t.Run("NameTakenMeanwhile", func(t *testing.T) {
		b.Interfaces = hostDevice("", "hd0")
		apply(t, d, b)
		travel := strandedName(mustLink(t, nsB, "net1").Attrs().Index)
		run(t, "ip", "-n", node, "link", "add", "hd0", "type", "veth", "peer", "name", "hd0x")
		if err := d.Detach(ctx, b.UID, b.NetNS); err != nil {
			t.Fatal(err)
		}
		if l := mustLink(t, node, travel); l.Attrs().HardwareAddr.String() != mac0.String() {
			t.Fatalf("the NIC waits on the node as %s: %+v", travel, l.Attrs())
		}
		_, err := d.RestoreDevices()
		requireMentions(t, err, "its name \"hd0\" is taken")
		run(t, "ip", "-n", node, "link", "del", "hd0")
		if restored, err := d.RestoreDevices(); err != nil || !slices.Equal(restored, []string{"hd0"}) {
			t.Fatalf("RestoreDevices once the name is free = %v, %v", restored, err)
		}
		requireOnNode(t, node, "hd0", 9000, mac0, true)
	})

	t.Run("ByDriver", func(t *testing.T) {
		c.Interfaces = []Interface{{Name: "net1", Kind: KindHostDevice, Devices: &DeviceSelector{Names: []string{"hd?"}, Drivers: []string{"e1000"}}}}
		_, err := d.Apply(ctx, c)
		requireMentions(t, err, "no node NIC matches names hd? and drivers e1000")
		c.Interfaces[0].Devices.Drivers = []string{"veth"}
		if st := apply(t, d, c); len(st) != 1 {
			t.Fatalf("pod C by driver veth: %+v", st)
		}
		if err := d.Detach(ctx, c.UID, c.NetNS); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("TheAllocatedOne", func(t *testing.T) {
		// Through DRA the scheduler chose hd1, although hd0 is free and
		// first by name; hd2, busy, is refused naming it.
		c.Interfaces = hostDevice("", "hd?")
		c.Interfaces[0].Allocated = "hd1"
		if st := apply(t, d, c); len(st) != 1 || st[0].MAC != mac1.String() {
			t.Fatalf("pod C's status %+v; want hd1 (%s), the allocated NIC", st, mac1)
		}
		requireOnNode(t, node, "hd0", 9000, mac0, true)
		requireIdempotent(t, d, c, nsC, node)
		if err := d.Detach(ctx, c.UID, c.NetNS); err != nil {
			t.Fatal(err)
		}
		c.Interfaces[0].Allocated = "hd2"
		_, err := d.Apply(ctx, c)
		requireMentions(t, err, `node NIC "hd2", allocated to it`, "hd2 (carries addresses)")
		if got := linkNames(t, nsC); len(got) != 0 {
			t.Fatalf("pod C holds %v after its refusal", got)
		}
	})

	t.Run("ReleasedAtSandboxStop", func(t *testing.T) {
		c.Interfaces = append(hostDevice("", "hd1"), Interface{Name: "net2", Kind: KindBridge, Bridge: "pnbrhd"})
		apply(t, d, c)
		if err := d.ReleaseDevices(c.UID, c.NetNS); err != nil {
			t.Fatal(err)
		}
		requireOnNode(t, node, "hd1", 1500, mac1, false)
		if got := linkNames(t, nsC); !slices.Equal(got, []string{"net2"}) {
			t.Fatalf("pod C after its devices were released: %v; want only net2, untouched", got)
		}
		if err := d.ReleaseDevices(c.UID, "/run/netns/pntest-gone"); err != nil {
			t.Fatalf("a netns that is gone: %v", err)
		}
		if err := d.Detach(ctx, c.UID, c.NetNS); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("InAVRFAndCheckedOnTheWire", func(t *testing.T) {
		// hd0's wire end holds 192.168.70.254 on the node: a NIC is
		// checked on the wire and enslaved to a VRF as any other kind.
		requireKernel(t, "vrf")
		c.Interfaces = hostDevice("192.168.70.254/24", "hd0")
		c.Interfaces[0].CheckDuplicates = true
		_, err := d.Apply(ctx, c)
		requireMentions(t, err, "address 192.168.70.254 is in use on its network by MAC")
		c.Interfaces = hostDevice("192.168.70.7/24", "hd0")
		c.Interfaces[0].CheckDuplicates = true
		c.Interfaces[0].VRF = &VRF{Name: "red", Table: 1001}
		if st := apply(t, d, c); len(st) != 1 || st[0].MAC != mac0.String() {
			t.Fatalf("pod C's status %+v; want hd0 (%s)", st, mac0)
		}
		red, ok := mustLink(t, nsC, "red").(*netlink.Vrf)
		if !ok || red.Table != 1001 || mustLink(t, nsC, "net1").Attrs().MasterIndex != red.Index {
			t.Fatalf("net1 of pod C is not in vrf red (table 1001): %+v", mustLink(t, nsC, "net1").Attrs())
		}
		if inVRF, inMain := tableRoutes(t, nsC, 1001), tableRoutes(t, nsC, unix.RT_TABLE_MAIN); !hasRoute(inVRF, "192.168.70.0/24 dev net1") || hasRoute(inMain, "192.168.70.0/24 dev net1") {
			t.Fatalf("the NIC's connected route: table 1001 %v, main %v; want it in the VRF's table only", inVRF, inMain)
		}
		requireIdempotent(t, d, c, nsC, node)
		if err := d.Detach(ctx, c.UID, c.NetNS); err != nil {
			t.Fatal(err)
		}
		requireOnNode(t, node, "hd0", 9000, mac0, true)
	})

	t.Run("Refused", func(t *testing.T) {
		c.Interfaces = []Interface{{Name: "net1", Kind: KindHostDevice, Devices: &DeviceSelector{Names: []string{"hd?"}}, MAC: mac1}}
		_, err := d.Apply(ctx, c)
		requireMentions(t, err, "mac: a host device keeps its own MAC")
		c.Interfaces = []Interface{{Name: "net1", Kind: KindHostDevice}}
		_, err = d.Apply(ctx, c)
		requireMentions(t, err, "devices: a host device interface must select node NICs")
		c.Interfaces = []Interface{{Name: "net1", Kind: KindHostDevice, Devices: &DeviceSelector{Names: []string{"hd["}}}}
		_, err = d.Apply(ctx, c)
		requireMentions(t, err, `devices.names: "hd[" is not a shell pattern`)
		if got := linkNames(t, nsC); len(got) != 0 {
			t.Fatalf("pod C holds %v after refusals", got)
		}
	})
	if t.Failed() {
		return
	}
	for _, name := range []string{"hd0", "hd1", "hd2"} {
		if !slices.Contains(linkNames(t, node), name) {
			t.Fatalf("%s is not on the node at the end: %s", name, strings.Join(linkNames(t, node), " "))
		}
	}
}
