package dataplane

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/vishvananda/netns"

	"podnet.io/podnet/podwait"
)

// outsideHost is a netns with one link on the node's bridge br, holding
// addrs without DAD: a host on the segment that podnet did not configure
// (a router, a server, a misconfigured box). It returns the host's MAC.
func outsideHost(t *testing.T, node, br string, addrs ...string) (ns string, mac net.HardwareAddr) {
	t.Helper()
	ns, _ = newNetNS(t, "outside")
	run(t, "ip", "-n", node, "link", "add", "outp", "type", "veth", "peer", "name", "out0", "netns", ns)
	run(t, "ip", "-n", node, "link", "set", "outp", "master", br, "up")
	for _, a := range addrs {
		args := []string{"ip", "-n", ns, "addr", "add", a, "dev", "out0"}
		if net.ParseIP(a[:len(a)-3]).To4() == nil {
			args = append(args, "nodad")
		}
		run(t, args...)
	}
	run(t, "ip", "-n", ns, "link", "set", "out0", "up")
	return ns, mustLink(t, ns, "out0").Attrs().HardwareAddr
}

// waitInPod runs podnet-wait's wait for net1 in the pod's netns, from now
// until it ends or timeout passes.
func waitInPod(t *testing.T, p Pod, timeout time.Duration) <-chan error {
	t.Helper()
	ns, err := netns.GetFromPath(p.NetNS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Close() })
	out := make(chan error, 1)
	go func() {
		out <- inNetNS(ns, func() error {
			return podwait.Wait(context.Background(), []string{"net1"}, timeout, 2*time.Millisecond)
		})
	}()
	return out
}

// TestRootWireCheck: an interface whose network checks addresses is
// probed on the wire before Apply counts it in place. A host outside
// podnet that holds one of its addresses, IPv4 (it answers the ARP probe)
// or IPv6 (it answers DAD's solicitation), fails the interface with an
// error naming the address and the host's MAC, and leaves it down, and
// podnet-wait never sees it ready, not even while it is up to be probed;
// the next Apply checks again, and succeeds once the host let the address go.
// A gateway that does not answer fails it too. The probes pass the pod's
// own port security.
func TestRootWireCheck(t *testing.T) {
	d, node := newNode(t)
	const br = "pnbr-wc"
	run(t, "ip", "-n", node, "link", "add", br, "type", "bridge")
	run(t, "ip", "-n", node, "link", "set", br, "up")
	outside, outsideMAC := outsideHost(t, node, br, "192.168.60.1/24", "fd00:60::1/64", "192.168.60.5/24", "fd00:60::5/64")

	names := map[string]string{} // pod UID: netns name
	pod := func(v4, v6 string, gateways ...string) Pod {
		name, p := newPod(t)
		names[p.UID] = name
		ifc := Interface{Name: "net1", Kind: KindBridge, Bridge: br, CheckDuplicates: true,
			Addresses: []net.IPNet{cidr(t, v4+"/24"), cidr(t, v6+"/64")}}
		for _, g := range gateways {
			ifc.CheckGateways = append(ifc.CheckGateways, net.ParseIP(g))
		}
		p.Interfaces = []Interface{ifc}
		return p
	}
	ctx := context.Background()

	t.Run("Free", func(t *testing.T) {
		p := pod("192.168.60.7", "fd00:60::7", "192.168.60.1", "fd00:60::1")
		waited := waitInPod(t, p, 10*time.Second)
		st, err := d.Apply(ctx, p)
		if err != nil || len(st) != 1 {
			t.Fatalf("free addresses, answering gateways: %+v, %v", st, err)
		}
		if err := <-waited; err != nil {
			t.Fatalf("podnet-wait after the checks passed: %v", err)
		}
		if !ping(t, outside, "192.168.60.7") || !ping(t, outside, "fd00:60::7") {
			t.Fatal("the checked interface does not carry traffic")
		}
	})

	conflict := func(t *testing.T, p Pod, addr string) {
		t.Helper()
		st, err := d.Apply(ctx, p)
		var ce *AddressConflictError
		if !errors.As(err, &ce) || !ce.Address.Equal(net.ParseIP(addr)) || ce.MAC.String() != outsideMAC.String() || ce.Interface != "net1" {
			t.Fatalf("address %s held by %s outside podnet: err %v", addr, outsideMAC, err)
		}
		requireMentions(t, err, addr, outsideMAC.String())
		if len(st) != 0 {
			t.Fatalf("a failed interface is reported in place: %+v", st)
		}
		if l := mustLink(t, names[p.UID], "net1"); l.Attrs().Flags&net.FlagUp != 0 {
			t.Fatal("the interface with a conflicting address is left up")
		}
	}
	t.Run("IPv4Conflict", func(t *testing.T) {
		p := pod("192.168.60.5", "fd00:60::8")
		// podnet-wait, watching from the start, never sees the link ready:
		// it is up while being probed, but carries the checking alias.
		waited := waitInPod(t, p, 2*time.Second)
		conflict(t, p, "192.168.60.5")
		var timeout *podwait.TimeoutError
		if err := <-waited; !errors.As(err, &timeout) {
			t.Fatalf("podnet-wait in the pod: %v, want it to time out: the app would start with a conflicting address", err)
		}
		// Checked again on the next Apply, not taken as in place.
		conflict(t, p, "192.168.60.5")
		run(t, "ip", "-n", outside, "addr", "del", "192.168.60.5/24", "dev", "out0")
		if st, err := d.Apply(ctx, p); err != nil || len(st) != 1 {
			t.Fatalf("after the outside host let the address go: %+v, %v", st, err)
		}
	})
	t.Run("IPv6Conflict", func(t *testing.T) {
		conflict(t, pod("192.168.60.9", "fd00:60::5"), "fd00:60::5")
	})
	// A pod that answers for an address that is not its own (one with
	// NET_RAW can send any ARP reply) is stopped at its port by port
	// security: it can neither take another pod's address nor fail the
	// probe of the pod the address is for.
	t.Run("HostilePodBehindPortSecurity", func(t *testing.T) {
		hostile := pod("192.168.60.21", "fd00:60::21")
		hostile.Interfaces[0].CheckDuplicates = false
		if _, err := d.Apply(ctx, hostile); err != nil {
			t.Fatal(err)
		}
		run(t, "ip", "-n", names[hostile.UID], "addr", "add", "192.168.60.22/24", "dev", "net1")
		run(t, "ip", "-n", names[hostile.UID], "addr", "add", "fd00:60::22/64", "dev", "net1", "nodad")
		if st, err := d.Apply(ctx, pod("192.168.60.22", "fd00:60::22")); err != nil || len(st) != 1 {
			t.Fatalf("the hostile pod's answers for 192.168.60.22 passed its port: %+v, %v", st, err)
		}
	})
	t.Run("GatewayUnanswered", func(t *testing.T) {
		for _, gw := range []string{"192.168.60.99", "fd00:60::99"} {
			_, err := d.Apply(ctx, pod("192.168.60.10", "fd00:60::10", gw))
			var ge *GatewayUnansweredError
			if !errors.As(err, &ge) || !ge.Gateway.Equal(net.ParseIP(gw)) {
				t.Fatalf("gateway %s that nobody holds: %v", gw, err)
			}
		}
	})
}
