package netpolicy

import (
	"net/netip"
	"testing"

	mnp "github.com/k8snetworkplumbingwg/multi-networkpolicy/pkg/apis/k8s.cni.cncf.io/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// matches is what the filter does with a packet, element by element
// (pkg/portsecurity's sets): an isolated direction passes it when an
// element's prefix, protocol range and port range hold it. ICMP carries
// no port: the filter reads two bytes there, which only an element of
// every port lets through whatever they are.
func matches(d PolicyDirection, peer netip.Addr, proto uint8, port int32, hasPort bool) bool {
	if !d.Isolated {
		return true
	}
	for _, a := range d.Allow {
		if !a.Peer.Contains(peer) || (!a.AnyProtocol && a.Protocol != proto) {
			continue
		}
		if hasPort && int32(a.PortLo) <= port && port <= int32(a.PortHi) || !hasPort && a.PortLo == 0 && a.PortHi == 65535 {
			return true
		}
	}
	return false
}

// TestCompileAgreesWithAllows: for every pod of the truth tables' cluster
// under a mix of policies and a floor, the compiled elements pass exactly
// what Allows passes, for peers inside and outside the cluster, on TCP,
// UDP, SCTP and ICMP, at ports inside, at the edges of and outside the
// rules' ranges.
func TestCompileAgreesWithAllows(t *testing.T) {
	udp, sctp := corev1.ProtocolUDP, corev1.ProtocolSCTP
	from, end := intstr.FromInt32(8000), int32(8080)
	policies := []Policy{
		policy("a", "web", mnp.MultiNetworkPolicySpec{PodSelector: *sel("app", "web"),
			Ingress: []mnp.MultiNetworkPolicyIngressRule{
				{From: []mnp.MultiNetworkPolicyPeer{{NamespaceSelector: sel("tenant", "x")}}, Ports: []mnp.MultiNetworkPolicyPort{tcp(80), {Port: &from, EndPort: &end}}},
				{From: []mnp.MultiNetworkPolicyPeer{{IPBlock: &mnp.IPBlock{CIDR: "10.9.0.0/16", Except: []string{"10.9.0.0/24"}}}}, Ports: []mnp.MultiNetworkPolicyPort{{Protocol: &udp}, {Protocol: &sctp}}},
			}}),
		policy("b", "egress", mnp.MultiNetworkPolicySpec{PolicyTypes: []mnp.MultiPolicyType{mnp.PolicyTypeEgress},
			Egress: []mnp.MultiNetworkPolicyEgressRule{{To: []mnp.MultiNetworkPolicyPeer{{PodSelector: sel()}}}, {Ports: []mnp.MultiNetworkPolicyPort{tcp(443)}}}}),
		policy("d", "deny", mnp.MultiNetworkPolicySpec{PolicyTypes: []mnp.MultiPolicyType{mnp.PolicyTypeIngress}}),
	}
	peers := []netip.Addr{outside, netip.MustParseAddr("10.9.5.5"), netip.MustParseAddr("fd09::1")}
	for _, p := range pods {
		peers = append(peers, p.Addresses...)
	}
	for _, floor := range []*Floor{nil, {Ingress: &Scope{SameLabel: "tenant", CIDRs: []netip.Prefix{netip.MustParsePrefix("10.9.0.0/16")}}, Egress: &Scope{SameNamespace: true}}} {
		verdicts, problems := Evaluate(Input{Policies: policies, Pods: pods, Namespaces: namespaces, Floor: floor})
		if len(problems) != 0 {
			t.Fatal(problems)
		}
		for name, v := range verdicts {
			for _, d := range []Direction{v.Ingress, v.Egress} {
				c := Compile(d)
				for _, peer := range peers {
					for _, pr := range []struct {
						proto corev1.Protocol
						num   uint8
						ports []int32
					}{
						{corev1.ProtocolTCP, 6, []int32{80, 443, 7999, 8000, 8080, 8081}},
						{corev1.ProtocolUDP, 17, []int32{53}},
						{corev1.ProtocolSCTP, 132, []int32{38412}},
						{"ICMP", 1, nil},
					} {
						if pr.ports == nil {
							if got, want := matches(c, peer, pr.num, 0, false), Allows(d, peer, pr.proto, 0); got != want {
								t.Errorf("floor %t, %s, %s ICMP: elements pass %t, Allows %t", floor != nil, name, peer, got, want)
							}
						}
						for _, port := range pr.ports {
							if got, want := matches(c, peer, pr.num, port, true), Allows(d, peer, pr.proto, port); got != want {
								t.Errorf("floor %t, %s, %s %s/%d: elements pass %t, Allows %t", floor != nil, name, peer, pr.proto, port, got, want)
							}
						}
					}
				}
			}
		}
	}
}
