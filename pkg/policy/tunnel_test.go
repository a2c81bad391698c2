package policy

import (
	"net/netip"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/ipam/rules"
)

// A WireGuard public key (base64 of 32 bytes) for the tables.
const peerKey = "HIgo9xNzJMWLKASShiTqIybxZ0U3wGLiUeJ1PKf8ykw="

// telcoTunnel offers a WireGuard tunnel and a VXLAN tunnel with a VNI
// range to the telco namespaces.
func telcoTunnel() v1alpha1.NetworkProfile {
	return v1alpha1.NetworkProfile{
		ObjectMeta: metav1.ObjectMeta{Name: "telco-tunnel", Generation: 1},
		Spec: v1alpha1.NetworkProfileSpec{
			NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tenant": "telco"}},
			Networks: []v1alpha1.Network{{
				Name: "wg",
				Tunnel: &v1alpha1.TunnelNetwork{
					WireGuard: &v1alpha1.WireGuardTunnel{},
					Endpoints: []v1alpha1.TunnelEndpoint{{CIDR: "203.0.113.0/24", Ports: []string{"51820-51829"}}, {CIDR: "2001:db8:5::/64", Ports: []string{"51820"}}},
				},
				MTU:    &v1alpha1.MTURange{Default: i32(1420), Max: i32(1420)},
				IPAM:   &v1alpha1.IPAM{Pools: []string{"10.70.0.0/24"}},
				Routes: &v1alpha1.RoutePolicy{Allowed: []string{"10.80.0.0/16"}},
			}, {
				Name: "vx",
				Tunnel: &v1alpha1.TunnelNetwork{
					VXLAN:     &v1alpha1.VXLANTunnel{VNIs: []string{"5000-5099"}},
					Endpoints: []v1alpha1.TunnelEndpoint{{CIDR: "198.51.100.7/32", Ports: []string{"4789"}}},
					Underlay:  &v1alpha1.VXLANLocal{Interface: "eth1"},
				},
				IPAM: &v1alpha1.IPAM{Pools: []string{"10.71.0.0/24"}},
			}},
		},
	}
}

func decideTunnel(t *testing.T, annotation string) (*v1alpha1.Approval, []string) {
	t.Helper()
	in := Input{Namespace: telcoNamespace(), Pod: podWith(annotation, ""), Profiles: []v1alpha1.NetworkProfile{telcoTunnel(), telcoData()}}
	a, errs := Decide(in)
	var msgs []string
	for _, e := range errs {
		msgs = append(msgs, e.Error())
	}
	return a, msgs
}

func TestTunnelApproved(t *testing.T) {
	a, errs := decideTunnel(t, `[{"name":"wg","endpoint":"203.0.113.9:51821","publicKey":"`+peerKey+`","routes":[{"dst":"10.80.1.0/24"}]},`+
		`{"name":"vx","endpoint":"198.51.100.7:4789","vni":5042}]`)
	if len(errs) > 0 {
		t.Fatalf("refused: %v", errs)
	}
	wg, vx := a.Interfaces[0], a.Interfaces[1]
	if wg.Kind != v1alpha1.KindWireGuard || wg.Tunnel == nil || wg.Tunnel.Endpoint != "203.0.113.9:51821" || wg.Tunnel.PeerPublicKey != peerKey {
		t.Fatalf("wireguard interface: %+v %+v", wg, wg.Tunnel)
	}
	// Absent allowed IPs are the pool and the routes.
	if got := strings.Join(wg.Tunnel.AllowedIPs, ","); got != "10.70.0.0/24,10.80.1.0/24" || wg.MTU != 1420 {
		t.Fatalf("wireguard allowed IPs %q mtu %d", got, wg.MTU)
	}
	if vx.Kind != v1alpha1.KindVXLANTunnel || vx.Tunnel.VNI != 5042 || vx.Tunnel.LocalInterface != "eth1" || vx.Tunnel.Endpoint != "198.51.100.7:4789" {
		t.Fatalf("vxlan interface: %+v %+v", vx, vx.Tunnel)
	}
	if s := rules.SpaceName(wg); s == "" || len(s) > 22 || s == rules.SpaceName(vx) {
		t.Fatalf("address spaces %q and %q", s, rules.SpaceName(vx))
	}
}

// TestTunnelRefused: each refusal names the field, the value and the
// profile's limit.
func TestTunnelRefused(t *testing.T) {
	for _, tc := range []struct {
		name, annotation string
		want             []string
	}{
		{"endpoint outside the cidrs", `[{"name":"wg","endpoint":"192.0.2.1:51820","publicKey":"` + peerKey + `"}]`,
			[]string{`[0].endpoint`, "192.0.2.1:51820", "203.0.113.0/24 ports 51820-51829"}},
		{"port outside the range", `[{"name":"wg","endpoint":"203.0.113.9:51830","publicKey":"` + peerKey + `"}]`,
			[]string{`[0].endpoint`, "203.0.113.9:51830", "51820-51829"}},
		{"ipv6 port", `[{"name":"wg","endpoint":"[2001:db8:5::1]:51821","publicKey":"` + peerKey + `"}]`,
			[]string{`[0].endpoint`, "2001:db8:5::/64 ports 51820"}},
		{"no endpoint", `[{"name":"wg","publicKey":"` + peerKey + `"}]`, []string{`[0].endpoint`, "Required", "203.0.113.0/24"}},
		{"no public key", `[{"name":"wg","endpoint":"203.0.113.9:51821"}]`, []string{`[0].publicKey`, "Required"}},
		{"bad public key", `[{"name":"wg","endpoint":"203.0.113.9:51821","publicKey":"c2hvcnQ="}]`, []string{`[0].publicKey`, "c2hvcnQ=", "32 bytes"}},
		{"allowed IPs outside", `[{"name":"wg","endpoint":"203.0.113.9:51821","publicKey":"` + peerKey + `","allowedIPs":["0.0.0.0/0"]}]`,
			[]string{`[0].allowedIPs[0]`, "0.0.0.0/0", "10.70.0.0/24, 10.80.0.0/16"}},
		{"loopback endpoint", `[{"name":"wg","endpoint":"127.0.0.1:51820","publicKey":"` + peerKey + `"}]`, []string{`[0].endpoint`, "unicast"}},
		{"vni outside", `[{"name":"vx","endpoint":"198.51.100.7:4789","vni":6000}]`, []string{`[0].vni`, "6000", "5000-5099"}},
		{"vni missing", `[{"name":"vx","endpoint":"198.51.100.7:4789"}]`, []string{`[0].vni`, "5000-5099"}},
		{"key on vxlan", `[{"name":"vx","endpoint":"198.51.100.7:4789","vni":5000,"publicKey":"` + peerKey + `"}]`, []string{`[0].publicKey`, "no public key"}},
		{"endpoint on a bridge", `[{"name":"l2","endpoint":"203.0.113.9:51821"}]`, []string{`[0].endpoint`, "no tunnel network"}},
		{"endpoint on eth0", `[{"interface":"eth0","mtu":1500,"endpoint":"203.0.113.9:51821"}]`, []string{`[0].endpoint`, "primary"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, errs := decideTunnel(t, tc.annotation)
			if a != nil {
				t.Fatalf("approved: %+v", a.Interfaces)
			}
			for _, e := range errs {
				if all(e, tc.want) {
					return
				}
			}
			t.Fatalf("no error names all of %q:\n%s", tc.want, strings.Join(errs, "\n"))
		})
	}
}

func all(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

func TestTunnelProfileChecks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(t *v1alpha1.TunnelNetwork)
		want   string
	}{
		{"both kinds", func(t *v1alpha1.TunnelNetwork) { t.VXLAN = &v1alpha1.VXLANTunnel{VNI: i32(1)} }, "both of tunnel.wireguard and tunnel.vxlan"},
		{"no endpoints", func(t *v1alpha1.TunnelNetwork) { t.Endpoints = nil }, "no tunnel.endpoints"},
		{"bad cidr", func(t *v1alpha1.TunnelNetwork) { t.Endpoints[0].CIDR = "203.0.113.1/24" }, "not a network CIDR"},
		{"bad ports", func(t *v1alpha1.TunnelNetwork) { t.Endpoints[0].Ports = []string{"9-2"} }, `"9-2"`},
		{"underlay on wireguard", func(t *v1alpha1.TunnelNetwork) { t.Underlay = &v1alpha1.VXLANLocal{Interface: "eth1"} }, "node's routes"},
		{"mac on wireguard", nil, "no MAC address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := telcoTunnel()
			if tc.change == nil {
				p.Spec.Networks[0].AllowStaticMAC = true
			} else {
				tc.change(p.Spec.Networks[0].Tunnel)
			}
			in := Input{Namespace: telcoNamespace(), Pod: podWith(`[{"name":"wg","endpoint":"203.0.113.9:51821","publicKey":"`+peerKey+`"}]`, ""), Profiles: []v1alpha1.NetworkProfile{p}}
			_, errs := Decide(in)
			requireErr(t, errs, tc.want, "an admin must fix the profile")
		})
	}
}

// TestTunnelRejudged: the agent's re-judging covers tunnels. An endpoint
// the admin removes detaches the running tunnel, naming the endpoint and
// the new limit; a changed underlay detaches it too; an unchanged
// profile revokes nothing.
func TestTunnelRejudged(t *testing.T) {
	a, errs := decideTunnel(t, `[{"name":"wg","endpoint":"203.0.113.9:51821","publicKey":"`+peerKey+`"},{"name":"vx","endpoint":"198.51.100.7:4789","vni":5001}]`)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	same := []v1alpha1.NetworkProfile{telcoTunnel()}
	if revs := Revoked(GrantInput{Namespace: telcoNamespace(), Profiles: same, Approval: a}); len(revs) > 0 {
		t.Fatalf("unchanged profile revoked %+v", revs)
	}
	p := telcoTunnel()
	p.Spec.Networks[0].Tunnel.Endpoints = p.Spec.Networks[0].Tunnel.Endpoints[1:]
	p.Spec.Networks[1].Tunnel.Underlay = &v1alpha1.VXLANLocal{Address: "192.0.2.10"}
	revs := Revoked(GrantInput{Namespace: telcoNamespace(), Profiles: []v1alpha1.NetworkProfile{p}, Approval: a})
	if len(revs) != 2 {
		t.Fatalf("want both tunnels revoked, got %+v", revs)
	}
	for _, r := range revs {
		if r.Narrowed != nil {
			t.Fatalf("tunnel %s narrowed in place, want detached: %+v", r.Interface, r)
		}
	}
	if !all(revs[0].Reason, []string{"endpoint", "203.0.113.9:51821", "2001:db8:5::/64 ports 51820"}) {
		t.Fatalf("reason does not name the endpoint and the limit: %s", revs[0].Reason)
	}
	if !strings.Contains(revs[1].Reason, "underlay address 192.0.2.10") {
		t.Fatalf("reason does not name the new underlay: %s", revs[1].Reason)
	}
	if left := Narrow(a, revs); len(left.Interfaces) != 0 {
		t.Fatalf("narrowed approval keeps %+v", left.Interfaces)
	}
}

// checkTunnelWithin re-checks an approved tunnel against its network by a
// simpler route than the policy's: the endpoint lies in one of the
// network's CIDRs with a port of that entry.
func checkTunnelWithin(t *testing.T, i v1alpha1.ApprovedInterface, n *v1alpha1.Network) {
	t.Helper()
	if (i.Tunnel != nil) != (n.Tunnel != nil) {
		t.Fatalf("interface %s: tunnel %+v on network %q with tunnel %+v", i.Interface, i.Tunnel, n.Name, n.Tunnel)
	}
	if i.Tunnel == nil {
		return
	}
	ep := netip.MustParseAddrPort(i.Tunnel.Endpoint)
	for _, e := range n.Tunnel.Endpoints {
		c := netip.MustParsePrefix(e.CIDR)
		ports, _ := parseRanges("ports", e.Ports, 65535)
		if c.Contains(ep.Addr()) && inRanges(ports, int64(ep.Port())) {
			return
		}
	}
	t.Fatalf("interface %s: endpoint %s outside network %q's endpoints %+v", i.Interface, ep, n.Name, n.Tunnel.Endpoints)
}

// FuzzTunnelNarrow approves a tunnel, then judges it against the profile
// with the admin's endpoints changed: a tunnel whose endpoint the changed
// profile does not allow is detached, never kept or narrowed, and one it
// allows stands.
func FuzzTunnelNarrow(f *testing.F) {
	f.Add("203.0.113.9:51821", "203.0.113.0/24", "51820-51829")
	f.Add("203.0.113.9:51821", "203.0.113.0/25", "51822")
	f.Add("[2001:db8:5::1]:51820", "2001:db8::/32", "1-65535")
	f.Add("203.0.113.9:51821", "0.0.0.0/0", "x")
	f.Fuzz(func(t *testing.T, endpoint, cidr, ports string) {
		a, errs := decideTunnel(t, `[{"name":"wg","endpoint":"`+strings.ReplaceAll(endpoint, `"`, "")+`","publicKey":"`+peerKey+`"}]`)
		if len(errs) > 0 {
			return
		}
		p := telcoTunnel()
		p.Spec.Networks[0].Tunnel.Endpoints = []v1alpha1.TunnelEndpoint{{CIDR: cidr, Ports: []string{ports}}}
		revs := Revoked(GrantInput{Namespace: telcoNamespace(), Profiles: []v1alpha1.NetworkProfile{p}, Approval: a})
		rules, err := parseEndpoints(p.Spec.Networks[0].Tunnel)
		allowed := err == nil && endpointAllowed(rules, netip.MustParseAddrPort(a.Interfaces[0].Tunnel.Endpoint))
		switch {
		case allowed && len(revs) > 0:
			t.Fatalf("endpoint %s allowed by %s %s, yet revoked: %+v", endpoint, cidr, ports, revs)
		case !allowed && (len(revs) != 1 || revs[0].Narrowed != nil || revs[0].Reason == ""):
			t.Fatalf("endpoint %s not allowed by %s %s, yet not detached: %+v", endpoint, cidr, ports, revs)
		}
	})
}
