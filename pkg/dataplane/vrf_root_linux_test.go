package dataplane

import (
	"context"
	"net"
	"os/exec"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"podnet.io/podnet/pkg/nldump"
)

func init() {
	kernelFeatures["vrf"] = kernelFeature{"vrf", []string{"pnprobe", "type", "vrf", "table", "1001"}}
}

// vrfNets are a pod's interface in VRF red (table 1001) with a route to
// 10.60.0.0/24 via the outside, and the outside's interface on the same
// bridge, which holds 10.60.0.1.
func vrfNets(t *testing.T, p, outside Pod) (Pod, Pod) {
	p.Interfaces = []Interface{{
		Name: "net1", Kind: KindBridge, Bridge: "pnbr-vrf",
		Addresses: []net.IPNet{cidr(t, "192.168.40.5/24"), cidr(t, "fd00:40::5/64")},
		Routes:    []Route{{Dst: network(t, "10.60.0.0/24"), Gateway: net.ParseIP("192.168.40.1").To4()}},
		VRF:       &VRF{Name: "red", Table: 1001},
	}}
	outside.Interfaces = []Interface{{
		Name: "net1", Kind: KindBridge, Bridge: "pnbr-vrf",
		Addresses: []net.IPNet{cidr(t, "192.168.40.1/24"), cidr(t, "10.60.0.1/24"), cidr(t, "fd00:40::1/64")},
	}}
	return p, outside
}

// pingVia pings from a netns with the socket bound to a device (a VRF
// device: the VRF's table decides the way).
func pingVia(nsName, dev, ip string) bool {
	cmd := "ping"
	if strings.Contains(ip, ":") {
		cmd = "ping6"
	}
	for range pingAttempts {
		if exec.Command("ip", "netns", "exec", nsName, "busybox", cmd, "-c", "1", "-W", "1", "-I", dev, ip).Run() == nil {
			return true
		}
	}
	return false
}

// tableRoutes lists a table's routes in a netns as "dst via gw dev".
func tableRoutes(t *testing.T, nsName string, table int) []string {
	t.Helper()
	h := handle(t, nsName)
	routes, err := nldump.Routes(h, netlink.FAMILY_ALL, &netlink.Route{Table: table}, netlink.RT_FILTER_TABLE)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range routes {
		if r.Dst == nil || r.Type != unix.RTN_UNICAST || r.Dst.String() == linkLocalPrefix {
			continue
		}
		l, err := h.LinkByIndex(r.LinkIndex)
		if err != nil {
			t.Fatal(err)
		}
		s := r.Dst.String()
		if r.Gw != nil {
			s += " via " + r.Gw.String()
		}
		out = append(out, s+" dev "+l.Attrs().Name)
	}
	return out
}

func hasRoute(routes []string, want string) bool {
	for _, r := range routes {
		if r == want {
			return true
		}
	}
	return false
}

// requireInVRF checks that net1 is in VRF vrf (table), podnet's and up,
// that the route and the connected network are in the VRF's table and not
// in main, and that the outside answers through the VRF only.
func requireInVRF(t *testing.T, podNS, vrf string, table int) {
	t.Helper()
	v, ok := mustLink(t, podNS, vrf).(*netlink.Vrf)
	if !ok || v.Table != uint32(table) || v.Alias != vrfAlias || v.Group != podGroup || v.Flags&net.FlagUp == 0 {
		t.Fatalf("vrf %s: %+v, want podnet's, up, table %d", vrf, mustLink(t, podNS, vrf).Attrs(), table)
	}
	if got := mustLink(t, podNS, "net1").Attrs().MasterIndex; got != v.Index {
		t.Fatalf("net1 master %d, want vrf %s (%d)", got, vrf, v.Index)
	}
	inVRF, inMain := tableRoutes(t, podNS, table), tableRoutes(t, podNS, unix.RT_TABLE_MAIN)
	for _, r := range []string{"10.60.0.0/24 via 192.168.40.1 dev net1", "192.168.40.0/24 dev net1", "fd00:40::/64 dev net1"} {
		if !hasRoute(inVRF, r) || hasRoute(inMain, r) {
			t.Fatalf("route %q: table %d %v, main %v; want it in the VRF's table only", r, table, inVRF, inMain)
		}
	}
	for _, ip := range []string{"10.60.0.1", "192.168.40.1", "fd00:40::1"} {
		if !pingVia(podNS, vrf, ip) {
			t.Fatalf("pod cannot reach %s through vrf %s\n%s", ip, vrf, snapshot(t, podNS))
		}
	}
	// The main table knows no way there.
	if pingOnce(t, podNS, "10.60.0.1") {
		t.Fatal("pod reaches 10.60.0.1 without the VRF: the main table carries the route")
	}
}

// TestRootVRF: an interface in a VRF passes traffic to the outside by the
// VRF's table, and the main table does not carry it; the interface moves
// out of the VRF, into another and back at run time; a VRF goes with its
// last interface; drift (released link, deleted or downed VRF) is
// repaired; detach removes the VRF.
func TestRootVRF(t *testing.T) {
	requireKernel(t, "veth", "bridge", "vrf")
	d, _ := newNode(t)
	podNS, p := newPod(t)
	_, outside := newPod(t)
	p, outside = vrfNets(t, p, outside)
	apply(t, d, outside)
	apply(t, d, p)
	requireInVRF(t, podNS, "red", 1001)
	requireIdempotent(t, d, p, podNS)

	t.Run("drift: released from the VRF", func(t *testing.T) {
		run(t, "ip", "-n", podNS, "link", "set", "net1", "nomaster")
		apply(t, d, p)
		requireInVRF(t, podNS, "red", 1001)
	})
	t.Run("drift: VRF deleted", func(t *testing.T) {
		run(t, "ip", "-n", podNS, "link", "del", "red")
		apply(t, d, p)
		requireInVRF(t, podNS, "red", 1001)
	})
	t.Run("drift: VRF down", func(t *testing.T) {
		run(t, "ip", "-n", podNS, "link", "set", "red", "down")
		apply(t, d, p)
		requireInVRF(t, podNS, "red", 1001)
		requireNoSteps(t, d, p)
	})
	t.Run("moved to another VRF", func(t *testing.T) {
		p.Interfaces[0].VRF = &VRF{Name: "blue", Table: 1002}
		apply(t, d, p)
		requireInVRF(t, podNS, "blue", 1002)
		if l, _ := linkByName(handle(t, podNS), "red"); l != nil {
			t.Fatal("vrf red stayed after its last interface left")
		}
		if routes := tableRoutes(t, podNS, 1001); len(routes) != 0 {
			t.Fatalf("table 1001 keeps %v", routes)
		}
		requireIdempotent(t, d, p, podNS)
	})
	t.Run("taken out of any VRF", func(t *testing.T) {
		p.Interfaces[0].VRF = nil
		apply(t, d, p)
		if l, _ := linkByName(handle(t, podNS), "blue"); l != nil {
			t.Fatal("vrf blue stayed after its last interface left")
		}
		if m := mustLink(t, podNS, "net1").Attrs().MasterIndex; m != 0 {
			t.Fatalf("net1 master %d, want none", m)
		}
		if main := tableRoutes(t, podNS, unix.RT_TABLE_MAIN); !hasRoute(main, "10.60.0.0/24 via 192.168.40.1 dev net1") {
			t.Fatalf("main table %v lacks the route", main)
		}
		if !ping(t, podNS, "10.60.0.1") || !ping(t, podNS, "fd00:40::1") {
			t.Fatal("pod cannot reach the outside by the main table")
		}
		requireIdempotent(t, d, p, podNS)
	})
	t.Run("put into a VRF at run time", func(t *testing.T) {
		p.Interfaces[0].VRF = &VRF{Name: "red", Table: 1001}
		apply(t, d, p)
		requireInVRF(t, podNS, "red", 1001)
		requireIdempotent(t, d, p, podNS)
	})
	if err := d.Detach(context.Background(), p.UID, p.NetNS); err != nil {
		t.Fatal(err)
	}
	if names := linkNames(t, podNS); len(names) != 0 {
		t.Fatalf("after detach the pod has %v", names)
	}
}

// TestRootVRFNotTakenOver: a VRF device of that name that podnet did not
// create is refused and left as it was; the pod's other interface is
// applied.
func TestRootVRFNotTakenOver(t *testing.T) {
	requireKernel(t, "veth", "bridge", "vrf")
	d, _ := newNode(t)
	podNS, p := newPod(t)
	run(t, "ip", "-n", podNS, "link", "add", "red", "type", "vrf", "table", "1001")
	before := mustLink(t, podNS, "red").Attrs().Index
	p.Interfaces = []Interface{
		{Name: "net1", Kind: KindBridge, Bridge: "pnbr-vrf2", VRF: &VRF{Name: "red", Table: 1001}},
		{Name: "net2", Kind: KindBridge, Bridge: "pnbr-vrf2"},
	}
	st, err := d.Apply(context.Background(), p)
	requireMentions(t, err, `interface "net1"`, `vrf "red"`, "not taken over", p.NetNS)
	if len(st) != 1 || st[0].Name != "net2" {
		t.Fatalf("statuses %+v, want net2 only", st)
	}
	red := mustLink(t, podNS, "red").Attrs()
	if red.Index != before || red.Alias != "" || red.Flags&net.FlagUp != 0 {
		t.Fatalf("the tenant's vrf was changed: %+v", red)
	}
	if l, _ := linkByName(handle(t, podNS), "net1"); l != nil {
		t.Fatal("net1 was created for a VRF that is not podnet's")
	}
	if err := d.Detach(context.Background(), p.UID, p.NetNS); err != nil {
		t.Fatal(err)
	}
	if _, err := linkByName(handle(t, podNS), "red"); err != nil || mustLink(t, podNS, "red").Attrs().Index != before {
		t.Fatal("detach removed the tenant's vrf")
	}
}
