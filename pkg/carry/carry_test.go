package carry

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/hostdev"
)

func keys(needs []Need) []string {
	var out []string
	for _, n := range needs {
		out = append(out, n.Key())
	}
	return out
}

func TestNeedsByKind(t *testing.T) {
	cases := []struct {
		name string
		net  v1alpha1.Network
		want []string
	}{
		{"node-local bridge", v1alpha1.Network{Bridge: &v1alpha1.BridgeNetwork{Name: "br0"}}, nil},
		{"macvlan", v1alpha1.Network{Macvlan: &v1alpha1.MacvlanNetwork{Master: "data0"}},
			[]string{"carry.podnet.io/mod.macvlan", "carry.podnet.io/nic.data0"}},
		{"ipvlan", v1alpha1.Network{IPVlan: &v1alpha1.IPVlanNetwork{Master: "eth1"}},
			[]string{"carry.podnet.io/mod.ipvlan", "carry.podnet.io/nic.eth1"}},
		{"vlan", v1alpha1.Network{VLAN: &v1alpha1.VLANNetwork{Master: "eth1"}},
			[]string{"carry.podnet.io/mod.8021q", "carry.podnet.io/nic.eth1"}},
		{"bridge uplink", v1alpha1.Network{Bridge: &v1alpha1.BridgeNetwork{Name: "br0", Uplink: &v1alpha1.UplinkSpan{Interface: "eth2"}}},
			[]string{"carry.podnet.io/nic.eth2"}},
		{"vxlan by InternalIP", v1alpha1.Network{Bridge: &v1alpha1.BridgeNetwork{Name: "br0", VXLAN: &v1alpha1.VXLANSpan{VNI: 7}}},
			[]string{"carry.podnet.io/mod.vxlan", "carry.podnet.io/underlay.ipv4"}},
		{"vxlan local interface", v1alpha1.Network{Bridge: &v1alpha1.BridgeNetwork{Name: "br0", VXLAN: &v1alpha1.VXLANSpan{VNI: 7, Local: &v1alpha1.VXLANLocal{Interface: "ul0"}}}},
			[]string{"carry.podnet.io/mod.vxlan", "carry.podnet.io/nic.ul0"}},
		{"vxlan local address", v1alpha1.Network{Bridge: &v1alpha1.BridgeNetwork{Name: "br0", VXLAN: &v1alpha1.VXLANSpan{VNI: 7, Local: &v1alpha1.VXLANLocal{Address: "192.0.2.10"}}}},
			[]string{"carry.podnet.io/addr.192.0.2.10", "carry.podnet.io/mod.vxlan"}},
		{"wireguard", v1alpha1.Network{Tunnel: &v1alpha1.TunnelNetwork{WireGuard: &v1alpha1.WireGuardTunnel{}}},
			[]string{"carry.podnet.io/mod.wireguard"}},
		{"vxlan tunnel with underlay", v1alpha1.Network{Tunnel: &v1alpha1.TunnelNetwork{VXLAN: &v1alpha1.VXLANTunnel{}, Underlay: &v1alpha1.VXLANLocal{Interface: "ul0"}}},
			[]string{"carry.podnet.io/mod.vxlan", "carry.podnet.io/nic.ul0"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := keys(Needs(&c.net))
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("keys = %v, want %v", got, c.want)
			}
		})
	}
}

// TestKeysAreValidLabels: every key is a valid label key; a name that is
// not a valid label name is hashed, each distinct name to its own key,
// and never to a literal name's key.
func TestKeysAreValidLabels(t *testing.T) {
	names := []string{"data0", "eth1.100", "a-", "a_", "x.", "nic-h.abc", "Eth_0", "fd00::1", "h-0123456789abcdef0123"}
	seen := map[string]string{}
	for _, n := range names {
		for _, need := range []Need{{What: NeedLink, Name: n}, {What: NeedAddress, Name: n}} {
			k := need.Key()
			if errs := validation.IsQualifiedName(k); len(errs) > 0 {
				t.Errorf("%v: key %q: %v", need, k, errs)
			}
			if !strings.HasPrefix(k, LabelPrefix+"/") {
				t.Errorf("%v: key %q outside %s", need, k, LabelPrefix)
			}
			if other, dup := seen[k]; dup {
				t.Errorf("key %q for both %s and %s %q", k, other, need.What, n)
			}
			seen[k] = string(need.What) + " " + n
		}
	}
	if k := (Need{What: NeedLink, Name: "a-"}).Key(); !strings.HasPrefix(k, LabelPrefix+"/nic-h.") {
		t.Errorf("an invalid label name is not hashed: %q", k)
	}
	under := Need{What: NeedUnderlay, Name: "IPv4", CIDRs: []string{"10.0.0.0/16"}}
	if errs := validation.IsQualifiedName(under.Key()); len(errs) > 0 {
		t.Errorf("underlay key %q: %v", under.Key(), errs)
	}
}

// TestNeedsOfProfilesBounded: labels grow with what admins configure,
// not with profiles × networks: two profiles with networks on one NIC
// need one label for it.
func TestNeedsOfProfilesBounded(t *testing.T) {
	mk := func(name, master string) v1alpha1.NetworkProfile {
		return v1alpha1.NetworkProfile{Spec: v1alpha1.NetworkProfileSpec{Networks: []v1alpha1.Network{
			{Name: name, Macvlan: &v1alpha1.MacvlanNetwork{Master: master}},
			{Name: name + "-v", VLAN: &v1alpha1.VLANNetwork{Master: master}},
		}}}
	}
	got := keys(NeedsOfProfiles([]v1alpha1.NetworkProfile{mk("a", "data0"), mk("b", "data0"), mk("c", "data0")}))
	want := []string{"carry.podnet.io/mod.8021q", "carry.podnet.io/mod.macvlan", "carry.podnet.io/nic.data0"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("keys = %v, want %v", got, want)
	}
}

func TestCarriesAndLacks(t *testing.T) {
	macvlan := &v1alpha1.Network{Name: "up", Macvlan: &v1alpha1.MacvlanNetwork{Master: "data0"},
		NodeSelector: &v1alpha1.NetworkNodeSelector{MatchLabels: map[string]string{"zone": "a"}}}
	vxlan := &v1alpha1.Network{Name: "ov", Bridge: &v1alpha1.BridgeNetwork{Name: "br0", VXLAN: &v1alpha1.VXLANSpan{VNI: 7,
		Underlay: &v1alpha1.VXLANUnderlay{CIDRs: []string{"10.0.0.0/16"}}}}}
	addr := &v1alpha1.Network{Name: "ad", Tunnel: &v1alpha1.TunnelNetwork{VXLAN: &v1alpha1.VXLANTunnel{}, Underlay: &v1alpha1.VXLANLocal{Address: "::ffff:192.0.2.10"}}}
	full := Node{
		Links:       map[string]bool{"data0": true},
		Modules:     map[string]bool{"macvlan": true, "bridge": true, "veth": true, "vxlan": true},
		Labels:      map[string]string{"zone": "a"},
		InternalIPs: []netip.Addr{netip.MustParseAddr("fd00::1"), netip.MustParseAddr("10.0.3.4")},
		Addresses:   []netip.Addr{netip.MustParseAddr("192.0.2.10")},
	}
	for _, n := range []*v1alpha1.Network{macvlan, vxlan, addr} {
		if !Carries(full, n) {
			t.Errorf("%s: full node lacks %v", n.Name, Lacks(full, n))
		}
	}
	cases := []struct {
		name string
		node func(*Node)
		net  *v1alpha1.Network
		want []string
	}{
		{"no NIC", func(n *Node) { n.Links = nil }, macvlan, []string{`host link "data0"`}},
		{"no module", func(n *Node) { delete(n.Modules, "macvlan") }, macvlan, []string{"kernel module macvlan"}},
		{"other zone", func(n *Node) { n.Labels = map[string]string{"zone": "b"} }, macvlan, []string{"node label zone In [a] (nodeSelector)"}},
		{"underlay outside cidrs", func(n *Node) { n.InternalIPs = []netip.Addr{netip.MustParseAddr("192.168.1.1")} }, vxlan,
			[]string{"an IPv4 InternalIP inside underlay.cidrs [10.0.0.0/16]"}},
		{"only the first InternalIP counts", func(n *Node) {
			n.InternalIPs = []netip.Addr{netip.MustParseAddr("192.168.1.1"), netip.MustParseAddr("10.0.3.4")}
		}, vxlan, []string{"an IPv4 InternalIP inside underlay.cidrs [10.0.0.0/16]"}},
		{"address not owned", func(n *Node) { n.Addresses = nil }, addr, []string{"host address 192.0.2.10"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := full
			n.Modules = map[string]bool{"macvlan": true, "bridge": true, "veth": true, "vxlan": true}
			c.node(&n)
			got := Lacks(n, c.net)
			if !reflect.DeepEqual(got, c.want) || Carries(n, c.net) {
				t.Errorf("Lacks = %q, want %q", got, c.want)
			}
		})
	}
}

func TestRequirementsConvertsTheSelector(t *testing.T) {
	n := &v1alpha1.Network{Name: "up", Macvlan: &v1alpha1.MacvlanNetwork{Master: "data0"},
		NodeSelector: &v1alpha1.NetworkNodeSelector{
			MatchLabels: map[string]string{"zone": "a", "rack": "r1"},
			MatchExpressions: []v1alpha1.NodeSelectorExpression{
				{Key: "tier", Operator: "NotIn", Values: []string{"edge"}},
				{Key: "gpu", Operator: "DoesNotExist"},
				{Key: "sriov", Operator: "Exists"},
				{Key: "pool", Operator: "In", Values: []string{"x", "y"}},
			}}}
	got, err := Requirements(n, field.NewPath("spec", "networks").Index(0))
	if err != nil {
		t.Fatal(err)
	}
	want := []corev1.NodeSelectorRequirement{
		{Key: "carry.podnet.io/mod.macvlan", Operator: corev1.NodeSelectorOpExists},
		{Key: "carry.podnet.io/nic.data0", Operator: corev1.NodeSelectorOpExists},
		{Key: "rack", Operator: corev1.NodeSelectorOpIn, Values: []string{"r1"}},
		{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}},
		{Key: "tier", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"edge"}},
		{Key: "gpu", Operator: corev1.NodeSelectorOpDoesNotExist},
		{Key: "sriov", Operator: corev1.NodeSelectorOpExists},
		{Key: "pool", Operator: corev1.NodeSelectorOpIn, Values: []string{"x", "y"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("requirements:\n got %v\nwant %v", got, want)
	}
}

func TestRequirementsRefusesABadSelector(t *testing.T) {
	for _, c := range []struct {
		sel  v1alpha1.NetworkNodeSelector
		want string
	}{
		{v1alpha1.NetworkNodeSelector{MatchLabels: map[string]string{"bad key!": "a"}}, "spec.networks[0].nodeSelector.matchLabels[bad key!]"},
		{v1alpha1.NetworkNodeSelector{MatchExpressions: []v1alpha1.NodeSelectorExpression{{Key: "k", Operator: "Gt", Values: []string{"1"}}}}, "spec.networks[0].nodeSelector.matchExpressions[0].operator"},
		{v1alpha1.NetworkNodeSelector{MatchExpressions: []v1alpha1.NodeSelectorExpression{{Key: "k", Operator: "In"}}}, "spec.networks[0].nodeSelector.matchExpressions[0].values"},
		{v1alpha1.NetworkNodeSelector{MatchExpressions: []v1alpha1.NodeSelectorExpression{{Key: "k", Operator: "Exists", Values: []string{"a"}}}}, "spec.networks[0].nodeSelector.matchExpressions[0].values"},
	} {
		n := &v1alpha1.Network{Bridge: &v1alpha1.BridgeNetwork{Name: "b"}, NodeSelector: &c.sel}
		_, err := Requirements(n, field.NewPath("spec", "networks").Index(0))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one naming %s", c.sel, err, c.want)
		}
	}
}

// FuzzIsLabelName: the hand-written check agrees with the API's own
// validation of a carry label key.
func FuzzIsLabelName(f *testing.F) {
	for _, s := range []string{"nic.data0", "nic.a-", "addr.fd00::1", "mod.8021q", "x", "", "nic._a", "nic.Eth_0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := len(validation.IsQualifiedName(LabelPrefix+"/"+s)) == 0
		if got := isLabelName(s); got != want {
			t.Fatalf("isLabelName(%q) = %v, the API says %v", s, got, want)
		}
	})
}

// TestHostDeviceNeedIsConsumed: a node has a hostDevice network's need
// while a NIC its selector matches is free; a pod on the node is never
// refused for lacking it (it may hold the NIC itself).
func TestHostDeviceNeedIsConsumed(t *testing.T) {
	n := &v1alpha1.Network{Name: "n", HostDevice: &v1alpha1.HostDeviceNetwork{Names: []string{"ens3f*"}, Drivers: []string{"ixgbe"}}}
	needs := Needs(n)
	if len(needs) != 1 || needs[0].What != NeedHostDevice || !strings.HasPrefix(needs[0].Key(), LabelPrefix+"/hostdev-h.") {
		t.Fatalf("needs %+v", needs)
	}
	free := Node{NICs: []hostdev.NIC{{Name: "ens3f1", Driver: "ixgbe"}}}
	if !free.Has(needs[0]) || (Node{NICs: []hostdev.NIC{{Name: "ens3f1", Driver: "i40e"}}}).Has(needs[0]) || (Node{}).Has(needs[0]) {
		t.Fatal("Has does not follow the selector")
	}
	if lacks := Lacks(Node{}, n); len(lacks) != 0 {
		t.Fatalf("a node whose NICs are all taken lacks %v; want nothing a running pod is refused for", lacks)
	}
}
