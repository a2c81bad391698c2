package dataplane

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"slices"
	"testing"

	"github.com/vishvananda/netlink"
)

// spanNodes are two throwaway "nodes" joined by a veth underlay "under0"
// (10.99.0.<n>/24, fd99::<n>/64) and a veth "data NIC" "data0" without
// addresses.
type spanNodes struct {
	d    [2]*Dataplane
	node [2]string
}

func newSpanNodes(t *testing.T) spanNodes {
	t.Helper()
	var s spanNodes
	for i := range 2 {
		s.d[i], s.node[i] = newNode(t)
	}
	for _, link := range []string{"under0", "data0"} {
		run(t, "ip", "-n", s.node[0], "link", "add", link, "type", "veth", "peer", "name", link, "netns", s.node[1])
	}
	for i, ns := range s.node {
		run(t, "ip", "-n", ns, "addr", "add", fmt.Sprintf("10.99.0.%d/24", i+1), "dev", "under0")
		run(t, "ip", "-n", ns, "addr", "add", fmt.Sprintf("fd99::%d/64", i+1), "dev", "under0", "nodad")
		run(t, "ip", "-n", ns, "link", "set", "under0", "up")
		run(t, "ip", "-n", ns, "link", "set", "data0", "up")
	}
	return s
}

// underlay is node i's underlay address of a family (4 or 6).
func underlay(i, family int) net.IP {
	if family == 6 {
		return net.ParseIP(fmt.Sprintf("fd99::%d", i+1))
	}
	return net.ParseIP(fmt.Sprintf("10.99.0.%d", i+1)).To4()
}

// overlayPod is pod host number host on node i of the bridge network
// "pnbr-span" spanning by vxlan over the underlay of a family.
func overlayPod(t *testing.T, p Pod, i, family, host int) Pod {
	t.Helper()
	p.Interfaces = []Interface{{
		Name: "net1", Kind: KindBridge, Bridge: "pnbr-span", MTU: 1400,
		VXLAN: &VXLAN{VNI: 4242, Local: underlay(i, family), Peers: []net.IP{underlay(1-i, family)}},
		Addresses: []net.IPNet{
			cidr(t, fmt.Sprintf("192.168.77.%d/24", host)), cidr(t, fmt.Sprintf("fd77::%d/64", host)),
		},
	}}
	return p
}

// overlayPods applies one overlay pod on each node.
func (s spanNodes) overlayPods(t *testing.T, family int) (podNS [2]string, pods [2]Pod) {
	t.Helper()
	for i := range 2 {
		podNS[i], pods[i] = newPod(t)
		pods[i] = overlayPod(t, pods[i], i, family, i+1)
		apply(t, s.d[i], pods[i])
	}
	return podNS, pods
}

// uplinkPod is pod host number host of the bridge network "pnbr-up"
// spanning through the data NIC.
func uplinkPod(t *testing.T, p Pod, host int) Pod {
	t.Helper()
	p.Interfaces = []Interface{{
		Name: "net1", Kind: KindBridge, Bridge: "pnbr-up", Uplink: "data0",
		Addresses: []net.IPNet{
			cidr(t, fmt.Sprintf("192.168.78.%d/24", host)), cidr(t, fmt.Sprintf("fd78::%d/64", host)),
		},
	}}
	return p
}

// nodePeers are the remotes of the all-zeros FDB entries of the bridge's
// VXLAN device on a node, sorted.
func nodePeers(t *testing.T, node, bridge string) []string {
	t.Helper()
	h := handle(t, node)
	peers, err := fdbPeers(h, mustLink(t, node, vxlanName(bridge)))
	if err != nil {
		t.Fatalf("read fdb: %v", err)
	}
	var out []string
	for key := range peers {
		out = append(out, key)
	}
	slices.Sort(out)
	return out
}

// hasLink reports whether a node has a link of that name.
func hasLink(t *testing.T, node, name string) bool {
	t.Helper()
	return slices.Contains(linkNames(t, node), name)
}

func detach(t *testing.T, d *Dataplane, p Pod) {
	t.Helper()
	if err := d.Detach(context.Background(), p.UID, p.NetNS); err != nil {
		t.Fatalf("detach: %v", err)
	}
}

func TestRootVXLANSpansTwoNodes(t *testing.T) {
	for _, family := range []int{4, 6} {
		t.Run(fmt.Sprintf("IPv%d underlay", family), func(t *testing.T) {
			requireKernel(t, "vxlan")
			s := newSpanNodes(t)
			podNS, pods := s.overlayPods(t, family)
			requirePings(t, "pod on node 1 to node 2", podNS[0], "192.168.77.2", "fd77::2")
			requirePings(t, "pod on node 2 to node 1", podNS[1], "192.168.77.1", "fd77::1")
			requireMTU(t, podNS[0], "net1", 1400)

			dev := mustLink(t, s.node[0], vxlanName("pnbr-span"))
			vx, ok := dev.(*netlink.Vxlan)
			if !ok || vx.VxlanId != 4242 || vx.Port != defaultVXLANPort || !vx.Learning || vx.Alias != vxlanAlias {
				t.Fatalf("vxlan device: %#v", dev)
			}
			if br := mustLink(t, s.node[0], "pnbr-span"); vx.MasterIndex != br.Attrs().Index {
				t.Fatalf("vxlan device master %d, want bridge %d", vx.MasterIndex, br.Attrs().Index)
			}
			if got, want := nodePeers(t, s.node[0], "pnbr-span"), []string{underlay(1, family).String()}; !slices.Equal(got, want) {
				t.Fatalf("fdb peers on node 1: %v, want %v", got, want)
			}
			requireIdempotent(t, s.d[0], pods[0], s.node[0], podNS[0])

			// A second pod on node 1 shares the device; the device and
			// the bridge go with the last pod, not the first.
			ns2, second := newPod(t)
			second = overlayPod(t, second, 0, family, 3)
			apply(t, s.d[0], second)
			requirePings(t, "second pod on node 1 to node 2", ns2, "192.168.77.2")
			if got := mustLink(t, s.node[0], vxlanName("pnbr-span")).Attrs().Index; got != dev.Attrs().Index {
				t.Fatalf("second pod recreated the vxlan device: ifindex %d, was %d", got, dev.Attrs().Index)
			}
			detach(t, s.d[0], pods[0])
			if !hasLink(t, s.node[0], vxlanName("pnbr-span")) || !hasLink(t, s.node[0], "pnbr-span") {
				t.Fatalf("device or bridge gone with a pod left: %v", linkNames(t, s.node[0]))
			}
			detach(t, s.d[0], second)
			if hasLink(t, s.node[0], vxlanName("pnbr-span")) || hasLink(t, s.node[0], "pnbr-span") {
				t.Fatalf("device or bridge left after the last pod: %v", linkNames(t, s.node[0]))
			}
		})
	}
}

func TestRootSyncPeersChangesOnlyWhatChanged(t *testing.T) {
	requireKernel(t, "vxlan")
	s := newSpanNodes(t)
	var podNS [2]string
	for i := range 2 {
		var p Pod
		podNS[i], p = newPod(t)
		p = overlayPod(t, p, i, 4, i+1)
		if i == 0 {
			p.Interfaces[0].VXLAN.Peers = append(p.Interfaces[0].VXLAN.Peers, net.ParseIP("10.99.0.50"))
		}
		apply(t, s.d[i], p)
	}
	if got := nodePeers(t, s.node[0], "pnbr-span"); !slices.Equal(got, []string{"10.99.0.2", "10.99.0.50"}) {
		t.Fatalf("fdb peers after apply: %v", got)
	}
	requirePings(t, "across", podNS[0], "192.168.77.2")
	sync := func(peers ...string) {
		t.Helper()
		var ips []net.IP
		for _, p := range peers {
			ips = append(ips, net.ParseIP(p))
		}
		if err := s.d[0].SyncPeers(context.Background(), "pnbr-span", ips); err != nil {
			t.Fatalf("sync peers %v: %v", peers, err)
		}
		got := nodePeers(t, s.node[0], "pnbr-span")
		if want := slices.Sorted(slices.Values(peers)); !slices.Equal(got, want) {
			t.Fatalf("fdb peers after sync: %v, want %v", got, want)
		}
		requirePings(t, "across after sync", podNS[0], "192.168.77.2", "fd77::2")
	}
	sync("10.99.0.2")               // a peer leaves
	sync("10.99.0.2", "10.99.0.60") // a peer joins
	sync("10.99.0.60", "10.99.0.2") // same set, other order

	// What the node's tunnel lock is planned from: the device as the
	// kernel has it.
	devs, err := s.d[0].SpanDevices(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) != 1 || devs[0].Bridge != "pnbr-span" || devs[0].Port != defaultVXLANPort || fmt.Sprint(devs[0].Peers) != "[10.99.0.2 10.99.0.60]" {
		t.Fatalf("SpanDevices = %+v, want the device of pnbr-span on port %d with peers [10.99.0.2 10.99.0.60]", devs, defaultVXLANPort)
	}

	// No device on a node without a pod of the network: nothing to do.
	if err := s.d[1].SyncPeers(context.Background(), "pnbr-none", []net.IP{net.ParseIP("10.99.0.1")}); err != nil {
		t.Fatalf("sync peers without a device: %v", err)
	}
	err = s.d[0].SyncPeers(context.Background(), "pnbr-span", []net.IP{net.ParseIP("10.99.0.2"), net.ParseIP("fd99::2")})
	requireMentions(t, err, "pnbr-span", "fd99::2", "family")
	// The device's underlay is IPv4: an IPv6 peer alone is refused too.
	err = s.d[0].SyncPeers(context.Background(), "pnbr-span", []net.IP{net.ParseIP("fd99::2")})
	requireMentions(t, err, "pnbr-span", "fd99::2", "IPv4")
}

// TestRootVXLANCarriesThePodMTU: over a jumbo underlay, a pod MTU above
// 1500 crosses in one frame: the VXLAN device takes the pod's MTU.
func TestRootVXLANCarriesThePodMTU(t *testing.T) {
	requireKernel(t, "vxlan")
	s := newSpanNodes(t)
	var podNS [2]string
	for i := range 2 {
		run(t, "ip", "-n", s.node[i], "link", "set", "under0", "mtu", "9000")
		var p Pod
		podNS[i], p = newPod(t)
		p = overlayPod(t, p, i, 4, i+1)
		p.Interfaces[0].MTU = 9000 - 50
		apply(t, s.d[i], p)
	}
	if got := mustLink(t, s.node[0], vxlanName("pnbr-span")).Attrs().MTU; got != 8950 {
		t.Fatalf("vxlan device mtu %d, want 8950", got)
	}
	// 8922 bytes of ICMP payload make an 8950-byte IPv4 packet.
	for attempt := 0; ; attempt++ {
		err := exec.Command("ip", "netns", "exec", podNS[0], "busybox", "ping", "-c", "1", "-W", "1", "-s", "8922", "192.168.77.2").Run()
		if err == nil {
			break
		}
		if attempt == pingAttempts {
			t.Fatalf("an 8950-byte packet does not cross: %v", err)
		}
	}
}

func TestRootVXLANRestartAdoptsTheDevice(t *testing.T) {
	requireKernel(t, "vxlan")
	s := newSpanNodes(t)
	podNS, pods := s.overlayPods(t, 4)
	before := mustLink(t, s.node[0], vxlanName("pnbr-span")).Attrs().Index

	// A new agent on node 1: the same pod applied again, and a new pod.
	restarted := &Dataplane{HostNetNS: s.d[0].HostNetNS}
	t.Cleanup(restarted.Close)
	apply(t, restarted, pods[0])
	ns2, second := newPod(t)
	second = overlayPod(t, second, 0, 4, 3)
	apply(t, restarted, second)
	if after := mustLink(t, s.node[0], vxlanName("pnbr-span")).Attrs().Index; after != before {
		t.Fatalf("restart recreated the vxlan device: ifindex %d, was %d", after, before)
	}
	requirePings(t, "first pod after restart", podNS[0], "192.168.77.2")
	requirePings(t, "new pod after restart", ns2, "192.168.77.2")

	// Other settings replace the device.
	third := second
	third.Interfaces = slices.Clone(second.Interfaces)
	vx := *third.Interfaces[0].VXLAN
	vx.Port = 4790
	third.Interfaces[0].VXLAN = &vx
	third.Interfaces[0].Name = "net2"
	third.Interfaces[0].Addresses = []net.IPNet{cidr(t, "192.168.77.4/24")}
	apply(t, restarted, Pod{UID: second.UID, NetNS: second.NetNS, Interfaces: append(second.Interfaces, third.Interfaces[0])})
	if got := mustLink(t, s.node[0], vxlanName("pnbr-span")).(*netlink.Vxlan); got.Port != 4790 {
		t.Fatalf("vxlan device of another port kept: port %d", got.Port)
	}
}

func TestRootUplinkSpansTwoNodes(t *testing.T) {
	s := newSpanNodes(t)
	var pods [2]Pod
	var podNS [2]string
	for i := range 2 {
		podNS[i], pods[i] = newPod(t)
		pods[i] = uplinkPod(t, pods[i], i+1)
		apply(t, s.d[i], pods[i])
	}
	requirePings(t, "pod on node 1 to node 2", podNS[0], "192.168.78.2", "fd78::2")
	requirePings(t, "pod on node 2 to node 1", podNS[1], "192.168.78.1", "fd78::1")
	br := mustLink(t, s.node[0], "pnbr-up")
	if got := mustLink(t, s.node[0], "data0").Attrs().MasterIndex; got != br.Attrs().Index {
		t.Fatalf("data0 master %d, want bridge %d", got, br.Attrs().Index)
	}
	requireIdempotent(t, s.d[0], pods[0], s.node[0], podNS[0])

	// The uplink does not keep the bridge: it goes with the last pod, and
	// the uplink is released, not deleted.
	detach(t, s.d[0], pods[0])
	if hasLink(t, s.node[0], "pnbr-up") {
		t.Fatalf("bridge left after the last pod: %v", linkNames(t, s.node[0]))
	}
	data := mustLink(t, s.node[0], "data0")
	if data.Attrs().MasterIndex != 0 {
		t.Fatalf("data0 still has master %d", data.Attrs().MasterIndex)
	}
}

func TestRootUplinkThatTheNodeUsesIsRefused(t *testing.T) {
	cases := []struct {
		name  string
		setup []string
		says  string
	}{
		{"address", []string{"addr", "add", "10.98.0.1/24", "dev", "data0"}, "carries address 10.98.0.1/24"},
		{"default route", []string{"route", "add", "default", "dev", "data0"}, "default route goes through it"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newSpanNodes(t)
			run(t, append([]string{"ip", "-n", s.node[0]}, c.setup...)...)
			podNS, p := newPod(t)
			p = uplinkPod(t, p, 1)
			_, err := s.d[0].Apply(context.Background(), p)
			requireMentions(t, err, `interface "net1"`, `uplink "data0"`, "refused", c.says)
			if got := mustLink(t, s.node[0], "data0").Attrs().MasterIndex; got != 0 {
				t.Fatalf("refused uplink was enslaved (master %d)", got)
			}
			if got := linkNames(t, podNS); slices.Contains(got, "net1") {
				t.Fatalf("refused interface left in the pod: %v", got)
			}
			if hasLink(t, s.node[0], "pnbr-up") {
				t.Fatalf("bridge left after the refusal: %v", linkNames(t, s.node[0]))
			}
		})
	}
}

// TestRootStrayVXLANDeviceIsCollected: a marked VXLAN device in no bridge
// (a run stopped between creating it and joining it) is collected; one in
// a bridge, and an unmarked one, are left alone.
func TestRootStrayVXLANDeviceIsCollected(t *testing.T) {
	requireKernel(t, "vxlan")
	s := newSpanNodes(t)
	_, p := newPod(t)
	apply(t, s.d[0], overlayPod(t, p, 0, 4, 1))
	stray, foreign := vxlanName("pnbr-gone"), "admin-vx"
	run(t, "ip", "-n", s.node[0], "link", "add", stray, "type", "vxlan", "id", "77", "dstport", "4789")
	run(t, "ip", "-n", s.node[0], "link", "set", stray, "alias", vxlanAlias)
	run(t, "ip", "-n", s.node[0], "link", "add", foreign, "type", "vxlan", "id", "78", "dstport", "4789")
	removed, err := s.d[0].CollectGarbage(context.Background(), func(uid string) bool { return uid == p.UID })
	if err != nil || !slices.Equal(removed, []string{stray}) {
		t.Fatalf("collected %v (%v), want only the stray device %s", removed, err, stray)
	}
	for _, name := range []string{vxlanName("pnbr-span"), foreign} {
		if !hasLink(t, s.node[0], name) {
			t.Fatalf("%s collected: %v", name, linkNames(t, s.node[0]))
		}
	}
}
