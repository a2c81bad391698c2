package underlay

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"podnet.io/podnet/test/netnstest"
)

// rxPackets is what a link in ns has received.
func rxPackets(t *testing.T, ns, link string) uint64 {
	t.Helper()
	l, err := netnstest.Handle(t, ns).LinkByName(link)
	if err != nil {
		t.Fatal(err)
	}
	return l.Attrs().Statistics.RxPackets
}

// TestRootTableLocksPointToPointTunnel builds a node, an endpoint outside
// the cluster, a pod with a point-to-point VXLAN tunnel to that endpoint
// (created from the node into the pod's netns, so its socket is the
// node's, as the dataplane makes it) and another pod routed by the node,
// the attacker. Without the table the attacker's packet to the node's
// tunnel port reaches the tunnel; with it, neither its own nor one
// spoofing the endpoint does, and the endpoint's still does.
func TestRootTableLocksPointToPointTunnel(t *testing.T) {
	requireRoot(t)
	node, out, attacker, pod := newNetNS(t, "n"), newNetNS(t, "o"), newNetNS(t, "p"), newNetNS(t, "t")
	for _, cmd := range [][]string{
		{"ip", "-n", node, "link", "add", "wan", "type", "veth", "peer", "o0", "netns", out},
		{"ip", "-n", node, "addr", "add", "10.99.0.1/24", "dev", "wan"},
		{"ip", "-n", out, "addr", "add", "10.99.0.2/24", "dev", "o0"},
		{"ip", "-n", node, "link", "set", "wan", "up"},
		{"ip", "-n", out, "link", "set", "o0", "up"},
		{"ip", "-n", node, "link", "add", "ap", "type", "veth", "peer", "p0", "netns", attacker},
		{"ip", "-n", node, "addr", "add", "10.99.1.1/24", "dev", "ap"},
		{"ip", "-n", attacker, "addr", "add", "10.99.1.2/24", "dev", "p0"},
		{"ip", "-n", node, "link", "set", "ap", "up"},
		{"ip", "-n", attacker, "link", "set", "p0", "up"},
		{"ip", "-n", attacker, "route", "add", "default", "via", "10.99.1.1"},
		{"ip", "netns", "exec", node, "sysctl", "-qw", "net.ipv4.ip_forward=1"},
		{"ip", "-n", node, "link", "add", "vt", "netns", pod, "type", "vxlan", "id", "5001", "remote", "10.99.0.2", "dstport", "4789", "nolearning"},
		{"ip", "-n", pod, "link", "set", "vt", "up"},
	} {
		run(t, cmd...)
	}
	waitRx := func(want uint64) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for rxPackets(t, pod, "vt") < want {
			if time.Now().After(deadline) {
				t.Fatalf("the tunnel never received packet %d", want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// Without the table, another pod injects into the tunnel.
	sendFrom(t, attacker, "-", "10.99.0.1", 5001, "02:00:00:00:00:01")
	waitRx(1)

	rs, err := Plan(PointToPointLocks(nil, [][]Tunnel{{PointToPoint(4789, 5001, IPv4, addrs("10.99.0.2"))}}, nil))
	if err != nil {
		t.Fatal(err)
	}
	tbl := &Table{NetNS: filepath.Join("/run/netns", node)}
	if err := tbl.Apply(rs); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tbl.Apply(Ruleset{}) })
	sendFrom(t, attacker, "-", "10.99.0.1", 5001, "02:00:00:00:00:02")
	sendFrom(t, attacker, "10.99.0.2", "10.99.0.1", 5001, "02:00:00:00:00:03")
	// The endpoint's own packet passes, and is sent after the attacker's.
	sendFrom(t, out, "-", "10.99.0.1", 5001, "02:00:00:00:00:04")
	waitRx(2)
	if got := rxPackets(t, pod, "vt"); got != 2 {
		t.Fatalf("the tunnel received %d packets, want 2 (the first attack and the endpoint's)", got)
	}
	if in := drops(t, tbl.NetNS, "input"); in != 2 {
		t.Fatalf("dropped %d packets on input, want 2", in)
	}
	// A restarted agent reads the lock back.
	back, err := (&Table{NetNS: tbl.NetNS}).PointToPointTunnels()
	if err != nil || len(back) != 1 || back[0].Name != "tun-4789-5001" || back[0].Family != IPv4 || fmt.Sprint(back[0].Peers) != "[10.99.0.2]" {
		t.Fatalf("read back %+v, %v", back, err)
	}
}
