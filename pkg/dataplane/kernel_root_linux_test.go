package dataplane

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// kernelFeature is a kernel feature some root tests need: the module that
// provides it and an `ip link add` that proves it (the first argument is the
// probe link's name, its parent is "probe0").
type kernelFeature struct {
	module string
	probe  []string
}

// The features the stock-kernel VM stage (hack/kernelvm) has and minimal
// kernels may lack.
var kernelFeatures = map[string]kernelFeature{
	"veth":                  {"veth", []string{"pnprobe", "type", "veth", "peer", "name", "pnprobe1"}},
	"bridge":                {"bridge", []string{"pnprobe", "type", "bridge"}},
	"bridge vlan_filtering": {"bridge (CONFIG_BRIDGE_VLAN_FILTERING)", []string{"pnprobe", "type", "bridge", "vlan_filtering", "1"}},
	"macvlan":               {"macvlan", []string{"pnprobe", "link", "probe0", "type", "macvlan", "mode", "bridge"}},
	"ipvlan":                {"ipvlan", []string{"pnprobe", "link", "probe0", "type", "ipvlan", "mode", "l2"}},
	"8021q":                 {"8021q", []string{"pnprobe", "link", "probe0", "type", "vlan", "id", "5"}},
	"vxlan":                 {"vxlan", []string{"pnprobe", "type", "vxlan", "id", "5", "dstport", "4789"}},
	"wireguard":             {"wireguard", []string{"pnprobe", "type", "wireguard"}},
}

var (
	kernelProbeMu sync.Mutex
	kernelProbed  = map[string]bool{}
)

// hasKernel reports whether the kernel has a feature of kernelFeatures,
// trying it once per test binary in a throwaway netns.
func hasKernel(t *testing.T, feature string) bool {
	t.Helper()
	f, ok := kernelFeatures[feature]
	if !ok {
		t.Fatalf("unknown kernel feature %q", feature)
	}
	kernelProbeMu.Lock()
	defer kernelProbeMu.Unlock()
	if has, done := kernelProbed[feature]; done {
		return has
	}
	requireRoot(t)
	ns, _ := newNetNS(t, "probe")
	run(t, "ip", "-n", ns, "link", "add", "probe0", "type", "veth", "peer", "name", "probe1")
	err := exec.Command("ip", append([]string{"-n", ns, "link", "add"}, f.probe...)...).Run()
	kernelProbed[feature] = err == nil
	return err == nil
}

// requireKernel skips the test, naming the missing module, on a kernel
// without one of the features. The stock-kernel VM stage fails on any skip,
// so there these tests always run.
func requireKernel(t *testing.T, features ...string) {
	t.Helper()
	for _, f := range features {
		if !hasKernel(t, f) {
			t.Skipf("this kernel has no %s (module %s): the kernel VM stage (make test-kernel) runs this test", f, kernelFeatures[f].module)
		}
	}
}

// TestRootMissingKernelFeatureIsRefused checks the path taken on kernels
// without 8021q, ipvlan, bridge VLAN filtering or wireguard: a clear error
// naming the interface, the feature and the netns, the pod's other
// interface applied, and nothing left of the refused one on either side. It proves nothing
// about the features themselves, and has nothing to check on a kernel that
// has them all (the VM stage's).
func TestRootMissingKernelFeatureIsRefused(t *testing.T) {
	requireRoot(t)
	cases := []struct {
		feature, says string
		ifc           Interface
	}{
		{"ipvlan", "kernel has no ipvlan", Interface{Name: "net1", Kind: KindIPVlan, Master: "eth1"}},
		{"8021q", "kernel has no 802.1Q VLAN (8021q)", Interface{Name: "net1", Kind: KindVLAN, Master: "eth1", VLAN: 100}},
		{"bridge vlan_filtering", "kernel has no bridge vlan_filtering", Interface{Name: "net1", Kind: KindBridge, Bridge: "pnbr-v", VLAN: 100}},
		{"wireguard", "kernel has no wireguard", Interface{Name: "net1", Kind: KindWireGuard, Tunnel: &Tunnel{
			Remote: netip.MustParseAddrPort("10.99.0.2:51820"), PeerPublicKey: "HIgo9xNzJMWLKASShiTqIybxZ0U3wGLiUeJ1PKf8ykw="}}},
	}
	checked := 0
	for _, c := range cases {
		if hasKernel(t, c.feature) && !withoutFeature(t, c.feature) {
			t.Logf("this kernel has %s built in or its module cannot be put back: its refusal is not checked here", c.feature)
			continue
		}
		checked++
		t.Run(c.feature, func(t *testing.T) {
			d, node := newNode(t)
			addParent(t, node, "eth1")
			podNS, p := newPod(t)
			nodeBefore := linkNames(t, node)
			p.Interfaces = []Interface{c.ifc, {Name: "ok1", Kind: KindBridge, Bridge: "pnbr-ok"}}
			st, err := d.Apply(context.Background(), p)
			requireMentions(t, err, `interface "net1"`, c.says, p.NetNS)
			if len(st) != 1 || st[0].Name != "ok1" {
				t.Fatalf("statuses %+v, want only ok1", st)
			}
			if got := linkNames(t, podNS); !slices.Equal(got, []string{"ok1"}) {
				t.Fatalf("pod links: %v, want only ok1", got)
			}
			want := append(slices.Clone(nodeBefore), hostName(p.UID, "ok1"), "pnbr-ok")
			slices.Sort(want)
			if got := linkNames(t, node); !slices.Equal(got, want) {
				t.Fatalf("node links: %v, want %v", got, want)
			}
		})
	}
	if checked == 0 {
		t.Fatal("no missing feature was checked: this kernel has every one built in and no module could be taken away")
	}
}

// withoutFeature takes the kernel module of a feature away for the rest
// of the test and puts it back at its end, where the test can: in the
// kernel VM stage, which loads its modules from /modules.d and has no
// modprobe to load them again on demand. Elsewhere (the host's kernel) and
// for a feature that is no module of its own it changes nothing and
// reports false. Links of the module in netns that earlier tests left
// still being torn down hold it briefly, so removal is retried.
func withoutFeature(t *testing.T, feature string) bool {
	t.Helper()
	module := kernelFeatures[feature].module
	ko := "/modules.d/" + module + ".ko"
	if _, err := os.Stat(ko); err != nil {
		return false
	}
	var out []byte
	var err error
	for range 50 {
		if out, err = exec.Command("rmmod", module).CombinedOutput(); err == nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("rmmod %s: %v: %s", module, err, out)
	}
	forget := func() {
		kernelProbeMu.Lock()
		delete(kernelProbed, feature)
		kernelProbeMu.Unlock()
	}
	t.Cleanup(func() {
		if out, err := exec.Command("insmod", ko).CombinedOutput(); err != nil {
			t.Errorf("insmod %s: %v: %s", ko, err, out)
		}
		forget()
	})
	forget()
	if hasKernel(t, feature) {
		t.Fatalf("%s still works after rmmod %s", feature, module)
	}
	return true
}

// addOutside gives the node a NIC-like parent: a veth "eth1" whose other
// end, "wire", is in a netns of its own, the host across the wire. It
// returns the parent's name and that netns.
func addOutside(t *testing.T, node string) (string, string) {
	t.Helper()
	outside, _ := newNetNS(t, "outside")
	run(t, "ip", "-n", node, "link", "add", "eth1", "type", "veth", "peer", "name", "wire", "netns", outside)
	run(t, "ip", "-n", node, "link", "set", "eth1", "up")
	run(t, "ip", "-n", outside, "link", "set", "wire", "up")
	return "eth1", outside
}

// wiredNode is a node whose NIC eth1 is wired to a host that has
// 192.168.<subnet>.254/24 and fd00:<subnet>::fe/64.
func wiredNode(t *testing.T, subnet int) (d *Dataplane, node, parent string) {
	t.Helper()
	d, node = newNode(t)
	parent, outside := addOutside(t, node)
	outsideAddrs(t, outside, "wire", fmt.Sprintf("192.168.%d.254/24", subnet), fmt.Sprintf("fd00:%d::fe/64", subnet))
	return d, node, parent
}

// onParent is a pod's one interface "net1" of a kind and mode on parent,
// host number host in 192.168.<subnet>.0/24 and fd00:<subnet>::/64.
func onParent(t *testing.T, kind Kind, parent, mode string, subnet, host int) []Interface {
	t.Helper()
	return []Interface{{Name: "net1", Kind: kind, Master: parent, Mode: mode, Addresses: []net.IPNet{
		cidr(t, fmt.Sprintf("192.168.%d.%d/24", subnet, host)), cidr(t, fmt.Sprintf("fd00:%d::%d/64", subnet, host)),
	}}}
}

// outsideAddrs gives a link of the outside netns addresses.
func outsideAddrs(t *testing.T, outside, link string, addrs ...string) {
	t.Helper()
	for _, a := range addrs {
		run(t, "ip", "-n", outside, "addr", "add", a, "dev", link, "nodad")
	}
	run(t, "ip", "-n", outside, "link", "set", link, "up")
}

// requirePings asserts that from reaches every ip, and requireNoPing that it
// reaches none.
func requirePings(t *testing.T, what, from string, ips ...string) {
	t.Helper()
	for _, ip := range ips {
		if !ping(t, from, ip) {
			t.Fatalf("%s: %s cannot reach %s", what, from, ip)
		}
	}
}

func requireNoPing(t *testing.T, what, from string, ips ...string) {
	t.Helper()
	for _, ip := range ips {
		if ping(t, from, ip) {
			t.Fatalf("%s: %s reached %s", what, from, ip)
		}
	}
}

// requireMTU asserts a link's MTU.
func requireMTU(t *testing.T, ns, link string, want int) {
	t.Helper()
	if got := mustLink(t, ns, link).Attrs().MTU; got != want {
		t.Fatalf("%s in %s: mtu %d, want %d", link, ns, got, want)
	}
}

// requirePodRoutes asserts the podnet routes of a pod, as "dst via gw".
func requirePodRoutes(t *testing.T, ns string, want ...string) {
	t.Helper()
	routes, err := podnetRouteList(handle(t, ns))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range routes {
		dst := ipNet(r.Dst, r.Family)
		s := dst.String()
		if r.Gw != nil {
			s += " via " + r.Gw.String()
		}
		got = append(got, s)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("podnet routes in %s: %v, want %v", ns, got, want)
	}
}

// detachAll detaches pods and asserts their netns keep no link.
func detachAll(t *testing.T, d *Dataplane, pods ...Pod) {
	t.Helper()
	for _, p := range pods {
		if err := d.Detach(context.Background(), p.UID, p.NetNS); err != nil {
			t.Fatalf("detach %s: %v", p.UID, err)
		}
		name := strings.TrimPrefix(p.NetNS, "/run/netns/")
		if got := linkNames(t, name); len(got) != 0 {
			t.Fatalf("pod %s after detach: %v", p.UID, got)
		}
	}
}
