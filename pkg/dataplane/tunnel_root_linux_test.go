package dataplane

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// outside wires a throwaway "outside" netns to the node by a veth: the
// node is 10.99.0.1/24 on "uplink", the outside 10.99.0.2/24. Pods reach
// the outside only through the node's netns, as a peer outside a cluster.
func outside(t *testing.T, node string) string {
	t.Helper()
	out, _ := newNetNS(t, "outside")
	run(t, "ip", "-n", node, "link", "add", "uplink", "type", "veth", "peer", "name", "wan", "netns", out)
	run(t, "ip", "-n", node, "addr", "add", "10.99.0.1/24", "dev", "uplink")
	run(t, "ip", "-n", out, "addr", "add", "10.99.0.2/24", "dev", "wan")
	run(t, "ip", "-n", node, "link", "set", "uplink", "up")
	run(t, "ip", "-n", out, "link", "set", "wan", "up")
	run(t, "ip", "-n", out, "link", "set", "lo", "up")
	return out
}

// requireNoRouteTo asserts that the pod netns itself cannot reach ip: the
// tunnel's packets must leave from the node.
func requireNoRouteTo(t *testing.T, pod, ip string) {
	t.Helper()
	routes, err := handle(t, pod).RouteGet(net.ParseIP(ip))
	if err == nil && len(routes) > 0 {
		t.Fatalf("the pod netns has a route to %s: %+v", ip, routes)
	}
}

// udpPorts lists the local UDP ports of a netns (":4789 :51820"), read
// from /proc/thread-self/net on a thread that joined it and is never
// handed back to the runtime (the kernel VM has no ss).
func udpPorts(t *testing.T, name string) string {
	t.Helper()
	ns := nsHandle(t, name)
	type result struct {
		ports string
		err   error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		if err := netns.Set(ns); err != nil {
			done <- result{err: err}
			return
		}
		var ports []string
		for _, f := range []string{"udp", "udp6"} {
			b, err := os.ReadFile("/proc/thread-self/net/" + f)
			if err != nil {
				done <- result{err: err}
				return
			}
			for _, line := range strings.Split(string(b), "\n")[1:] {
				fields := strings.Fields(line)
				if len(fields) < 2 {
					continue
				}
				_, hexPort, _ := strings.Cut(fields[1], ":")
				port, err := strconv.ParseUint(hexPort, 16, 16)
				if err == nil {
					ports = append(ports, fmt.Sprintf(":%d", port))
				}
			}
		}
		done <- result{ports: strings.Join(ports, " ")}
	}()
	r := <-done
	if r.err != nil {
		t.Fatalf("udp ports of %s: %v", name, r.err)
	}
	return r.ports
}

// TestRootVXLANTunnel passes traffic between a pod and a peer outside the
// cluster through a point-to-point VXLAN tunnel whose socket is on the
// node; a new remote recreates the device; Detach leaves nothing.
func TestRootVXLANTunnel(t *testing.T) {
	d, node := newNode(t)
	out := outside(t, node)
	run(t, "ip", "-n", out, "link", "add", "vx0", "type", "vxlan", "id", "5001", "remote", "10.99.0.1", "local", "10.99.0.2", "dstport", "4789", "nolearning")
	run(t, "ip", "-n", out, "addr", "add", "10.71.0.1/24", "dev", "vx0")
	run(t, "ip", "-n", out, "link", "set", "vx0", "up")
	nodeBefore := snapshot(t, node)
	pod, p := newPod(t)
	p.Interfaces = []Interface{{
		Name: "net1", Kind: KindVXLANTunnel, Addresses: []net.IPNet{cidr(t, "10.71.0.2/24")},
		Tunnel: &Tunnel{Remote: netip.MustParseAddrPort("10.99.0.2:4789"), VNI: 5001, Dev: "uplink", Local: net.ParseIP("10.99.0.1").To4()},
	}}
	st := apply(t, d, p)
	if len(st) != 1 || st[0].MTU != defaultVXLANMTU {
		t.Fatalf("status %+v", st)
	}
	l, ok := mustLink(t, pod, "net1").(*netlink.Vxlan)
	if !ok || l.VxlanId != 5001 || l.Learning || l.Attrs().Alias != "podnet:net1" {
		t.Fatalf("net1: %+v", l)
	}
	requireNoRouteTo(t, pod, "10.99.0.2")
	if !strings.Contains(udpPorts(t, node), ":4789") || strings.Contains(udpPorts(t, pod), ":4789") {
		t.Fatalf("the tunnel's socket is not on the node:\nnode: %s\npod: %s", udpPorts(t, node), udpPorts(t, pod))
	}
	if got := snapshot(t, node); got != nodeBefore {
		t.Fatalf("the node gained links:\nbefore:\n%s\nafter:\n%s", nodeBefore, got)
	}
	if !ping(t, pod, "10.71.0.1") {
		t.Fatal("pod cannot reach the outside peer through the tunnel")
	}
	requireIdempotent(t, d, p, pod, node)

	// The kernel fixes a VXLAN device's remote: a new one recreates it.
	index := l.Attrs().Index
	p.Interfaces[0].Tunnel.Remote = netip.MustParseAddrPort("10.99.0.3:4789")
	apply(t, d, p)
	l2 := mustLink(t, pod, "net1").(*netlink.Vxlan)
	if l2.Attrs().Index == index || !l2.Group.Equal(net.ParseIP("10.99.0.3")) {
		t.Fatalf("after a new remote: index %d (was %d), remote %v", l2.Attrs().Index, index, l2.Group)
	}
	requireIdempotent(t, d, p, pod, node)

	if err := d.Detach(context.Background(), p.UID, p.NetNS); err != nil {
		t.Fatal(err)
	}
	if got := linkNames(t, pod); len(got) != 0 {
		t.Fatalf("pod after detach: %v", got)
	}
	if ports := udpPorts(t, node); strings.Contains(ports, ":4789") {
		t.Fatalf("the node still listens after detach: %s", ports)
	}
	if got := snapshot(t, node); got != nodeBefore {
		t.Fatalf("the node changed:\nbefore:\n%s\nafter:\n%s", nodeBefore, got)
	}
}

// TestRootTunnelRefusesAMissingUnderlay names the missing node interface.
func TestRootTunnelRefusesAMissingUnderlay(t *testing.T) {
	d, _ := newNode(t)
	_, p := newPod(t)
	p.Interfaces = []Interface{{Name: "net1", Kind: KindVXLANTunnel,
		Tunnel: &Tunnel{Remote: netip.MustParseAddrPort("10.99.0.2:4789"), VNI: 5001, Dev: "nosuch0"}}}
	_, err := d.Apply(context.Background(), p)
	requireMentions(t, err, `"net1"`, `"nosuch0"`, "not found on the node")
}

// nsHandle opens a named netns for the test's own wgctrl calls.
func nsHandle(t *testing.T, name string) netns.NsHandle {
	t.Helper()
	ns, err := netns.GetFromName(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Close() })
	return ns
}
