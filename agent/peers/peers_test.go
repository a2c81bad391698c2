package peers

import (
	"fmt"
	"net"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"podnet.io/podnet/api/v1alpha1"
)

// node is a Node carrying VNI 7 (and 8) with the addresses ("ext:" for
// an ExternalIP).
func node(name string, addrs ...string) corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{v1alpha1.NodeVNIsAnnotation: "7,8"}}}
	for _, a := range addrs {
		typ := corev1.NodeInternalIP
		if strings.HasPrefix(a, "ext:") {
			typ, a = corev1.NodeExternalIP, strings.TrimPrefix(a, "ext:")
		}
		n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: typ, Address: a})
	}
	return n
}

func ips(ss ...string) []net.IP {
	var out []net.IP
	for _, s := range ss {
		ip := net.ParseIP(s)
		if v4 := ip.To4(); v4 != nil {
			ip = v4
		}
		out = append(out, ip)
	}
	return out
}

func TestPeers(t *testing.T) {
	base := []corev1.Node{node("n1", "10.0.0.1", "fd00::1"), node("n2", "10.0.0.2", "fd00::2"), node("n3", "10.0.0.3")}
	other := node("n9", "10.0.0.9")
	other.Annotations[v1alpha1.NodeVNIsAnnotation] = "70,9"
	none := node("n10", "10.0.0.10")
	none.Annotations = nil
	for _, tc := range []struct {
		name    string
		nodes   []corev1.Node
		self    string
		family  corev1.IPFamily
		want    []net.IP
		cidrs   []string
		refused string
	}{
		{"nodes that do not carry the VNI are no peers", append(base, other, none), "n1", corev1.IPv4Protocol, ips("10.0.0.2", "10.0.0.3"), nil, ""},
		{"a loopback InternalIP is no peer", append(base, node("lo", "127.0.0.2")), "n1", corev1.IPv4Protocol, ips("10.0.0.2", "10.0.0.3"), nil, `node "lo": underlay address 127.0.0.2: loopback`},
		{"link-local and unspecified are no peers", append(base, node("ll", "169.254.1.1"), node("any", "0.0.0.0")), "n1", corev1.IPv4Protocol, ips("10.0.0.2", "10.0.0.3"), nil, `node "any"`},
		{"outside the declared underlay", base, "n1", corev1.IPv4Protocol, ips("10.0.0.2"), []string{"10.0.0.0/31", "10.0.0.2/32"}, `node "n3": underlay address 10.0.0.3: outside underlay.cidrs`},
		{"IPv6 outside the declared underlay", base, "n3", corev1.IPv6Protocol, ips("fd00::2"), []string{"fd00::2/128"}, `node "n1"`},
		{"own node excluded", base, "n1", corev1.IPv4Protocol, ips("10.0.0.2", "10.0.0.3"), nil, ""},
		{"join", append(base, node("n4", "10.0.0.4")), "n1", corev1.IPv4Protocol, ips("10.0.0.2", "10.0.0.3", "10.0.0.4"), nil, ""},
		{"leave", base[:2], "n1", corev1.IPv4Protocol, ips("10.0.0.2"), nil, ""},
		{"address change", []corev1.Node{base[0], node("n2", "10.0.0.22"), base[2]}, "n1", corev1.IPv4Protocol, ips("10.0.0.3", "10.0.0.22"), nil, ""},
		{"IPv6 underlay skips IPv4-only nodes", base, "n1", corev1.IPv6Protocol, ips("fd00::2"), nil, ""},
		{"dual-stack node listed in the family asked", base, "n3", corev1.IPv6Protocol, ips("fd00::1", "fd00::2"), nil, ""},
		{"external addresses are not the underlay", []corev1.Node{base[0], node("n5", "ext:203.0.113.5")}, "n1", corev1.IPv4Protocol, nil, nil, ""},
		{"two nodes claiming one address give one peer", append(base, node("n2b", "10.0.0.2")), "n1", corev1.IPv4Protocol, ips("10.0.0.2", "10.0.0.3"), nil, ""},
		{"unparsable address skipped", []corev1.Node{base[0], node("bad", "not-an-ip")}, "n1", corev1.IPv4Protocol, nil, nil, ""},
		{"alone", base[:1], "n1", corev1.IPv4Protocol, nil, nil, ""},
		{"order of the node list does not matter", []corev1.Node{base[2], base[1], base[0]}, "n1", corev1.IPv4Protocol, ips("10.0.0.2", "10.0.0.3"), nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, refused := Peers(tc.nodes, tc.self, Span{VNI: 7, Family: tc.family, CIDRs: tc.cidrs})
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("Peers = %v, want %v", got, tc.want)
			}
			if tc.refused == "" && len(refused) > 0 || tc.refused != "" && !strings.Contains(strings.Join(refused, "; "), tc.refused) {
				t.Fatalf("refused %q, want it to say %q", refused, tc.refused)
			}
			for _, ip := range got {
				if tc.family == corev1.IPv4Protocol && len(ip) != net.IPv4len {
					t.Errorf("IPv4 peer %v in %d-byte form, want 4", ip, len(ip))
				}
			}
		})
	}
}

func TestTrimKeepsNameUIDAndInternalIPs(t *testing.T) {
	in := &corev1.Node{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "u", ResourceVersion: "7", Labels: map[string]string{"a": "b"},
			Annotations: map[string]string{"big": "x", v1alpha1.NodeVNIsAnnotation: "7"}, ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}},
		Spec: corev1.NodeSpec{PodCIDR: "10.1.0.0/24"},
		Status: corev1.NodeStatus{
			Addresses:  []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: "n1"}, {Type: corev1.NodeInternalIP, Address: "10.0.0.1"}, {Type: corev1.NodeExternalIP, Address: "203.0.113.1"}, {Type: corev1.NodeInternalIP, Address: "fd00::1"}},
			Images:     []corev1.ContainerImage{{Names: []string{"img"}, SizeBytes: 1}},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
	out, err := Trim(in)
	if err != nil {
		t.Fatal(err)
	}
	want := &corev1.Node{TypeMeta: in.TypeMeta, ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "u", ResourceVersion: "7", Annotations: map[string]string{v1alpha1.NodeVNIsAnnotation: "7"}},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}, {Type: corev1.NodeInternalIP, Address: "fd00::1"}}}}
	if !reflect.DeepEqual(out, want) {
		t.Fatalf("Trim = %+v, want %+v", out, want)
	}
	tomb := cache.DeletedFinalStateUnknown{Key: "n1"}
	if got, _ := Trim(tomb); got != tomb {
		t.Fatalf("tombstone changed: %+v", got)
	}
}

func TestAddressesChanged(t *testing.T) {
	a := node("n1", "10.0.0.1")
	heartbeat := node("n1", "10.0.0.1")
	heartbeat.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	heartbeat.ResourceVersion = "9"
	if relevantChange(&a, &heartbeat) {
		t.Error("a heartbeat counts as an address change")
	}
	moved := node("n1", "10.0.0.9")
	if !relevantChange(&a, &moved) {
		t.Error("a new InternalIP is not an address change")
	}
	second := node("n1", "10.0.0.1", "fd00::1")
	if !relevantChange(&a, &second) {
		t.Error("a second family is not an address change")
	}
	vnis := node("n1", "10.0.0.1")
	vnis.Annotations[v1alpha1.NodeVNIsAnnotation] = "7"
	if !relevantChange(&a, &vnis) {
		t.Error("a change of the VNIs a node carries is not a change")
	}
	ext := node("n1", "10.0.0.1", "ext:203.0.113.1")
	if relevantChange(&a, &ext) {
		t.Error("an ExternalIP counts as an underlay change")
	}
}
