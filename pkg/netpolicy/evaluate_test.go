package netpolicy

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	mnp "github.com/k8snetworkplumbingwg/multi-networkpolicy/pkg/apis/k8s.cni.cncf.io/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The cluster of the truth tables: namespaces a (no tenant), b and c
// (tenant x) and d (tenant y); pods with one IPv4 and one IPv6 address
// on the network.
var (
	namespaces = map[string]map[string]string{
		"a": {"kubernetes.io/metadata.name": "a"},
		"b": {"kubernetes.io/metadata.name": "b", "tenant": "x"},
		"c": {"kubernetes.io/metadata.name": "c", "tenant": "x"},
		"d": {"kubernetes.io/metadata.name": "d", "tenant": "y"},
	}
	pods = []Pod{
		pod("a", "web", "web", 1),
		pod("a", "db", "db", 2),
		pod("b", "web", "web", 3),
		pod("c", "web", "web", 4),
		pod("d", "web", "web", 5),
	}
	outside = netip.MustParseAddr("10.9.0.5")
)

func pod(ns, name, app string, n int) Pod {
	return Pod{Namespace: ns, Name: name, Labels: map[string]string{"app": app}, Addresses: []netip.Addr{
		netip.MustParseAddr(fmt.Sprintf("10.0.0.%d", n)), netip.MustParseAddr(fmt.Sprintf("fd00::%d", n)),
	}}
}

func sel(kv ...string) *metav1.LabelSelector {
	s := &metav1.LabelSelector{MatchLabels: map[string]string{}}
	for i := 0; i+1 < len(kv); i += 2 {
		s.MatchLabels[kv[i]] = kv[i+1]
	}
	return s
}

func tcp(port int32) mnp.MultiNetworkPolicyPort {
	p := corev1.ProtocolTCP
	v := intstr.FromInt32(port)
	return mnp.MultiNetworkPolicyPort{Protocol: &p, Port: &v}
}

func policy(ns, name string, spec mnp.MultiNetworkPolicySpec) Policy {
	return Policy{Namespace: ns, Name: name, Spec: spec}
}

// probe is one cell: traffic to pod `to` from the pod `from` (ns/name) or
// an outside address, on a protocol and port.
type probe struct {
	to, from string
	proto    corev1.Protocol
	port     int32
}

// reach says whether the probe passes both the source's egress and the
// target's ingress, for each of the target's addresses' families.
func reach(t *testing.T, v map[string]Verdict, pr probe) bool {
	t.Helper()
	var src []netip.Addr
	var srcVerdict *Verdict
	if pr.from == "outside" {
		src = []netip.Addr{outside}
	} else {
		for _, p := range pods {
			if p.Key() == pr.from {
				src = p.Addresses
				sv := v[p.Key()]
				srcVerdict = &sv
			}
		}
	}
	var dst []netip.Addr
	for _, p := range pods {
		if p.Key() == pr.to {
			dst = p.Addresses
		}
	}
	if len(src) == 0 || len(dst) == 0 {
		t.Fatalf("probe %+v names an unknown pod", pr)
	}
	ok := true
	for _, s := range src {
		for _, d := range dst {
			if s.Is4() != d.Is4() {
				continue
			}
			in := Allows(v[pr.to].Ingress, s, pr.proto, pr.port)
			out := srcVerdict == nil || Allows(srcVerdict.Egress, d, pr.proto, pr.port)
			ok = ok && in && out
		}
	}
	return ok
}

// TestTruthTable: each case's expected cells are written from
// NetworkPolicy's semantics. Every pair of pods is probed on TCP 80, UDP
// 53 and ICMP; a cell not listed as reachable must be denied.
func TestTruthTable(t *testing.T) {
	all := []string{"a/web", "a/db", "b/web", "c/web", "d/web"}
	type cell struct{ to, from string }
	// everyone: every ordered pair, on every protocol.
	everyone := func(except ...string) map[cell]string {
		m := map[cell]string{}
		for _, to := range all {
			for _, from := range all {
				if to != from {
					m[cell{to, from}] = "tcp udp icmp"
				}
			}
		}
		for _, x := range except {
			for c := range m {
				if c.to == x {
					delete(m, c)
				}
			}
		}
		return m
	}
	with := func(m map[cell]string, to, from, protos string) map[cell]string {
		m[cell{to, from}] = protos
		return m
	}
	udp := corev1.ProtocolUDP
	for _, tc := range []struct {
		name     string
		policies []Policy
		floor    *Floor
		want     map[cell]string // cells that reach, with the protocols
	}{
		{name: "no policy: everything reaches everything", want: everyone()},
		{
			name:     "deny all ingress in a",
			policies: []Policy{policy("a", "deny", mnp.MultiNetworkPolicySpec{PolicyTypes: []mnp.MultiPolicyType{mnp.PolicyTypeIngress}})},
			want:     everyone("a/web", "a/db"),
		},
		{
			name: "a/web from its own namespace only",
			policies: []Policy{policy("a", "same-ns", mnp.MultiNetworkPolicySpec{PodSelector: *sel("app", "web"),
				Ingress: []mnp.MultiNetworkPolicyIngressRule{{From: []mnp.MultiNetworkPolicyPeer{{PodSelector: sel()}}}}})},
			want: with(everyone("a/web"), "a/web", "a/db", "tcp udp icmp"),
		},
		{
			name: "a/web from tenant x's namespaces, TCP 80 only",
			policies: []Policy{policy("a", "tenant-x", mnp.MultiNetworkPolicySpec{PodSelector: *sel("app", "web"),
				Ingress: []mnp.MultiNetworkPolicyIngressRule{{From: []mnp.MultiNetworkPolicyPeer{{NamespaceSelector: sel("tenant", "x")}}, Ports: []mnp.MultiNetworkPolicyPort{tcp(80)}}}})},
			want: with(with(everyone("a/web"), "a/web", "b/web", "tcp"), "a/web", "c/web", "tcp"),
		},
		{
			name: "namespace and pod selector in one peer: only web pods of tenant x",
			policies: []Policy{policy("a", "and", mnp.MultiNetworkPolicySpec{PodSelector: *sel("app", "db"),
				Ingress: []mnp.MultiNetworkPolicyIngressRule{{From: []mnp.MultiNetworkPolicyPeer{{NamespaceSelector: sel("tenant", "x"), PodSelector: sel("app", "web")}}}}})},
			want: with(with(everyone("a/db"), "a/db", "b/web", "tcp udp icmp"), "a/db", "c/web", "tcp udp icmp"),
		},
		{
			name: "two policies add up",
			policies: []Policy{
				policy("b", "from-a", mnp.MultiNetworkPolicySpec{Ingress: []mnp.MultiNetworkPolicyIngressRule{{From: []mnp.MultiNetworkPolicyPeer{{NamespaceSelector: sel("kubernetes.io/metadata.name", "a")}}}}}),
				policy("b", "from-d-udp", mnp.MultiNetworkPolicySpec{Ingress: []mnp.MultiNetworkPolicyIngressRule{{From: []mnp.MultiNetworkPolicyPeer{{NamespaceSelector: sel("tenant", "y")}}, Ports: []mnp.MultiNetworkPolicyPort{{Protocol: &udp}}}}}),
			},
			want: with(with(with(everyone("b/web"), "b/web", "a/web", "tcp udp icmp"), "b/web", "a/db", "tcp udp icmp"), "b/web", "d/web", "udp"),
		},
		{
			name: "egress of a/db to c only",
			policies: []Policy{policy("a", "egress", mnp.MultiNetworkPolicySpec{PodSelector: *sel("app", "db"), PolicyTypes: []mnp.MultiPolicyType{mnp.PolicyTypeEgress},
				Egress: []mnp.MultiNetworkPolicyEgressRule{{To: []mnp.MultiNetworkPolicyPeer{{NamespaceSelector: sel("kubernetes.io/metadata.name", "c")}}}}})},
			want: func() map[cell]string {
				m := everyone()
				for _, to := range all {
					if to != "c/web" {
						delete(m, cell{to, "a/db"})
					}
				}
				return m
			}(),
		},
		{
			name:  "floor: ingress from the same namespace, no policy",
			floor: &Floor{Ingress: &Scope{SameNamespace: true}},
			want:  map[cell]string{{"a/web", "a/db"}: "tcp udp icmp", {"a/db", "a/web"}: "tcp udp icmp"},
		},
		{
			name:  "floor: a tenant's policy cannot open what the floor closes",
			floor: &Floor{Ingress: &Scope{SameLabel: "tenant"}},
			policies: []Policy{policy("b", "open-to-all", mnp.MultiNetworkPolicySpec{
				Ingress: []mnp.MultiNetworkPolicyIngressRule{{From: []mnp.MultiNetworkPolicyPeer{{NamespaceSelector: sel()}}}}})},
			// b and c share tenant x; a has no tenant label, so nothing
			// reaches a's pods; d is alone in tenant y.
			want: map[cell]string{{"b/web", "c/web"}: "tcp udp icmp", {"c/web", "b/web"}: "tcp udp icmp"},
		},
		{
			name:  "floor: a tenant's policy narrows further",
			floor: &Floor{Ingress: &Scope{SameLabel: "tenant"}},
			policies: []Policy{policy("c", "tcp-80", mnp.MultiNetworkPolicySpec{
				Ingress: []mnp.MultiNetworkPolicyIngressRule{{Ports: []mnp.MultiNetworkPolicyPort{tcp(80)}}}})},
			want: map[cell]string{{"b/web", "c/web"}: "tcp udp icmp", {"c/web", "b/web"}: "tcp"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, problems := Evaluate(Input{Policies: tc.policies, Pods: pods, Namespaces: namespaces, Floor: tc.floor})
			if len(problems) != 0 {
				t.Fatalf("problems: %v", problems)
			}
			for _, to := range all {
				for _, from := range all {
					if to == from {
						continue
					}
					for _, pr := range []struct {
						name  string
						proto corev1.Protocol
						port  int32
					}{{"tcp", corev1.ProtocolTCP, 80}, {"udp", corev1.ProtocolUDP, 53}, {"icmp", "ICMP", 0}} {
						want := strings.Contains(" "+tc.want[cell{to, from}]+" ", " "+pr.name+" ")
						if got := reach(t, v, probe{to: to, from: from, proto: pr.proto, port: pr.port}); got != want {
							t.Errorf("%s -> %s %s: reaches %t, want %t", from, to, pr.name, got, want)
						}
					}
				}
			}
		})
	}
}

// TestIPBlockAndPorts: an ipBlock with except, port ranges and SCTP, in
// both families.
func TestIPBlockAndPorts(t *testing.T) {
	sctp := corev1.ProtocolSCTP
	from, end := intstr.FromInt32(8000), int32(8080)
	v, problems := Evaluate(Input{Pods: pods, Namespaces: namespaces, Policies: []Policy{policy("a", "blocks", mnp.MultiNetworkPolicySpec{
		PodSelector: *sel("app", "web"),
		Ingress: []mnp.MultiNetworkPolicyIngressRule{{
			From: []mnp.MultiNetworkPolicyPeer{
				{IPBlock: &mnp.IPBlock{CIDR: "10.9.0.0/16", Except: []string{"10.9.128.0/17", "10.9.0.0/24"}}},
				{IPBlock: &mnp.IPBlock{CIDR: "fd09::/64"}},
			},
			Ports: []mnp.MultiNetworkPolicyPort{{Port: &from, EndPort: &end}, {Protocol: &sctp}},
		}},
	})}})
	if len(problems) != 0 {
		t.Fatalf("problems: %v", problems)
	}
	in := v["a/web"].Ingress
	for _, c := range []struct {
		peer  string
		proto corev1.Protocol
		port  int32
		want  bool
	}{
		{"10.9.1.1", corev1.ProtocolTCP, 8000, true},
		{"10.9.1.1", corev1.ProtocolTCP, 8080, true},
		{"10.9.1.1", corev1.ProtocolTCP, 8081, false},
		{"10.9.1.1", corev1.ProtocolUDP, 8000, false},
		{"10.9.1.1", corev1.ProtocolSCTP, 38412, true},
		{"10.9.0.7", corev1.ProtocolTCP, 8000, false},
		{"10.9.200.1", corev1.ProtocolTCP, 8000, false},
		{"10.8.1.1", corev1.ProtocolTCP, 8000, false},
		{"fd09::7", corev1.ProtocolTCP, 8001, true},
		{"fd0a::7", corev1.ProtocolTCP, 8001, false},
		{"::ffff:10.9.1.1", corev1.ProtocolTCP, 8000, true},
	} {
		if got := Allows(in, netip.MustParseAddr(c.peer), c.proto, c.port); got != c.want {
			t.Errorf("%s %s/%d: allowed %t, want %t", c.peer, c.proto, c.port, got, c.want)
		}
	}
	if !Allows(v["a/db"].Ingress, outside, corev1.ProtocolTCP, 1) {
		t.Error("a/db, selected by no policy, is isolated")
	}
}

// TestProblems: what podnet cannot honour is named with its field, and
// allows nothing rather than everything.
func TestProblems(t *testing.T) {
	named := intstr.FromString("http")
	sctpBad := corev1.Protocol("ICMP")
	bad, end := intstr.FromInt32(90), int32(80)
	for _, tc := range []struct {
		name  string
		rule  mnp.MultiNetworkPolicyIngressRule
		field string
		why   string
	}{
		{"named port", mnp.MultiNetworkPolicyIngressRule{Ports: []mnp.MultiNetworkPolicyPort{{Port: &named}}}, "spec.ingress[0].ports[0].port", `named port "http" is not supported`},
		{"protocol", mnp.MultiNetworkPolicyIngressRule{Ports: []mnp.MultiNetworkPolicyPort{{Protocol: &sctpBad}}}, "spec.ingress[0].ports[0].protocol", "is not TCP, UDP or SCTP"},
		{"end below port", mnp.MultiNetworkPolicyIngressRule{Ports: []mnp.MultiNetworkPolicyPort{{Port: &bad, EndPort: &end}}}, "spec.ingress[0].ports[0].endPort", "needs a numeric port at or below it"},
		{"bad cidr", mnp.MultiNetworkPolicyIngressRule{From: []mnp.MultiNetworkPolicyPeer{{IPBlock: &mnp.IPBlock{CIDR: "10.0.0.0/33"}}}}, "spec.ingress[0].from[0].ipBlock.cidr", "is not a CIDR"},
		{"except outside", mnp.MultiNetworkPolicyIngressRule{From: []mnp.MultiNetworkPolicyPeer{{IPBlock: &mnp.IPBlock{CIDR: "10.0.0.0/24", Except: []string{"10.1.0.0/24"}}}}}, "spec.ingress[0].from[0].ipBlock.except[0]", "is not a CIDR inside 10.0.0.0/24"},
		{"empty peer", mnp.MultiNetworkPolicyIngressRule{From: []mnp.MultiNetworkPolicyPeer{{}}}, "spec.ingress[0].from[0]", "sets podSelector, namespaceSelector or ipBlock"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, problems := Evaluate(Input{Pods: pods, Namespaces: namespaces, Policies: []Policy{policy("a", "p", mnp.MultiNetworkPolicySpec{
				Ingress: []mnp.MultiNetworkPolicyIngressRule{tc.rule},
			})}})
			if len(problems) != 1 || problems[0].Policy != "a/p" || problems[0].Field != tc.field || !strings.Contains(problems[0].Reason, tc.why) {
				t.Fatalf("problems %v; want one at %s saying %q", problems, tc.field, tc.why)
			}
			if in := v["a/web"].Ingress; !in.Isolated || Allows(in, netip.MustParseAddr("10.0.0.2"), corev1.ProtocolTCP, 80) {
				t.Fatalf("a/web's ingress %+v: want isolated and nothing allowed", in)
			}
		})
	}
}

func TestExcept(t *testing.T) {
	got := except(netip.MustParsePrefix("10.0.0.0/24"), []netip.Prefix{netip.MustParsePrefix("10.0.0.64/26"), netip.MustParsePrefix("10.0.0.255/32")})
	want := "[10.0.0.0/26 10.0.0.128/26 10.0.0.192/27 10.0.0.224/28 10.0.0.240/29 10.0.0.248/30 10.0.0.252/31 10.0.0.254/32]"
	if fmt.Sprint(got) != want {
		t.Fatalf("except = %v, want %s", got, want)
	}
}

// TestAllowedBy: a verdict names the policies that let a peer in, each
// once, and the policies and floor that isolate a direction that denies
// it; a tenant's rule cut to the floor is still named by its policy.
func TestAllowedBy(t *testing.T) {
	web80 := policy("a", "web-80", mnp.MultiNetworkPolicySpec{PodSelector: *sel("app", "web"),
		Ingress: []mnp.MultiNetworkPolicyIngressRule{{From: []mnp.MultiNetworkPolicyPeer{{NamespaceSelector: sel()}}, Ports: []mnp.MultiNetworkPolicyPort{tcp(80)}}}})
	fromB := policy("a", "from-b", mnp.MultiNetworkPolicySpec{PodSelector: *sel(),
		Ingress: []mnp.MultiNetworkPolicyIngressRule{{From: []mnp.MultiNetworkPolicyPeer{{NamespaceSelector: sel("kubernetes.io/metadata.name", "b")}}}}})
	floor := &Floor{Ingress: &Scope{SameNamespace: true, CIDRs: []netip.Prefix{netip.MustParsePrefix("10.0.0.3/32")}}}
	v, problems := Evaluate(Input{Policies: []Policy{web80, fromB}, Pods: pods, Namespaces: namespaces})
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	fromBWeb := netip.MustParseAddr("10.0.0.3")
	in := v["a/web"].Ingress
	if got := AllowedBy(in, fromBWeb, corev1.ProtocolTCP, 80); strings.Join(got, ",") != "a/from-b,a/web-80" {
		t.Errorf("b/web to a/web tcp 80 allowed by %v, want a/from-b and a/web-80", got)
	}
	if got := AllowedBy(in, netip.MustParseAddr("10.0.0.5"), corev1.ProtocolTCP, 81); len(got) != 0 || strings.Join(in.IsolatedBy, ",") != "a/from-b,a/web-80" {
		t.Errorf("d/web to a/web tcp 81 allowed by %v, isolated by %v", got, in.IsolatedBy)
	}
	v, _ = Evaluate(Input{Policies: []Policy{web80}, Pods: pods, Namespaces: namespaces, Floor: floor})
	in = v["a/web"].Ingress
	if got := AllowedBy(in, fromBWeb, corev1.ProtocolTCP, 80); strings.Join(got, ",") != "a/web-80" {
		t.Errorf("under the floor, b/web to a/web tcp 80 allowed by %v, want a/web-80", got)
	}
	if got := AllowedBy(in, netip.MustParseAddr("10.0.0.5"), corev1.ProtocolTCP, 80); len(got) != 0 || strings.Join(in.IsolatedBy, ",") != "a/web-80,"+FloorName {
		t.Errorf("under the floor, d/web to a/web tcp 80 allowed by %v, isolated by %v", got, in.IsolatedBy)
	}
	db := v["a/db"].Ingress
	if got := AllowedBy(db, netip.MustParseAddr("10.0.0.1"), corev1.ProtocolUDP, 53); strings.Join(got, ",") != FloorName {
		t.Errorf("a/web to a/db udp 53 allowed by %v, want the floor", got)
	}
}
