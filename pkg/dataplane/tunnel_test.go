package dataplane

import (
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
)

const testPeerKey = "HIgo9xNzJMWLKASShiTqIybxZ0U3wGLiUeJ1PKf8ykw="

func wgNet() Interface {
	return Interface{Name: "wg1", Kind: KindWireGuard, Addresses: []net.IPNet{{IP: net.IPv4(10, 70, 0, 2).To4(), Mask: net.CIDRMask(24, 32)}},
		Tunnel: &Tunnel{Remote: netip.MustParseAddrPort("203.0.113.9:51820"), PeerPublicKey: testPeerKey}}
}

func vxNet() Interface {
	return Interface{Name: "vx1", Kind: KindVXLANTunnel,
		Tunnel: &Tunnel{Remote: netip.MustParseAddrPort("198.51.100.7:4789"), VNI: 5001, Dev: "eth1"}}
}

func tunnelOps(steps []Step) []string {
	var out []string
	for _, s := range steps {
		out = append(out, string(s.Op)+" "+s.Interface)
	}
	return out
}

// TestPlanWireGuard: a new WireGuard device gets its key pair and peer
// before its addresses and before it goes up; a new peer is configured in
// place (the device and its key stay); a device that lost its key is
// given one again.
func TestPlanWireGuard(t *testing.T) {
	p := pod(wgNet())
	steps := mustPlan(p, node())
	if got := strings.Join(tunnelOps(steps), ", "); got != "create wg1, configure-tunnel wg1, add-address wg1, up wg1" {
		t.Fatalf("create: %s", got)
	}
	if steps[0].Spec.MTU != defaultWireGuardMTU {
		t.Fatalf("mtu %d", steps[0].Spec.MTU)
	}
	s := converged(t, p, node())
	p.Interfaces[0].Tunnel.Remote = netip.MustParseAddrPort("203.0.113.10:51821")
	if got := tunnelOps(mustPlan(p, s)); !slices.Equal(got, []string{"configure-tunnel wg1"}) {
		t.Fatalf("new endpoint: %v", got)
	}
	s = converged(t, p, s)
	if s.Links["wg1"].Tunnel.PublicKey != "pod-key" {
		t.Fatalf("the key changed: %+v", s.Links["wg1"].Tunnel)
	}
	lost := s.Links["wg1"]
	lost.Tunnel = &TunnelState{Remote: lost.Tunnel.Remote, PeerPublicKey: lost.Tunnel.PeerPublicKey}
	s.Links["wg1"] = lost
	if got := tunnelOps(mustPlan(p, s)); !slices.Equal(got, []string{"configure-tunnel wg1"}) {
		t.Fatalf("device without a key: %v", got)
	}
}

// TestPlanVXLANTunnel: the kernel fixes a VXLAN device's remote and VNI,
// so a new one recreates it; the underlay interface must be on the node.
func TestPlanVXLANTunnel(t *testing.T) {
	p := pod(vxNet())
	s := converged(t, p, node())
	for name, change := range map[string]func(*Tunnel){
		"remote": func(t *Tunnel) { t.Remote = netip.MustParseAddrPort("198.51.100.8:4789") },
		"vni":    func(t *Tunnel) { t.VNI = 5002 },
	} {
		q := pod(vxNet())
		change(q.Interfaces[0].Tunnel)
		if got := tunnelOps(mustPlan(q, s)); len(got) < 2 || got[0] != "delete vx1" || got[1] != "create vx1" {
			t.Errorf("new %s: %v", name, got)
		}
	}
	q := pod(vxNet())
	q.Interfaces[0].Tunnel.Dev = "eth9"
	if _, err := Plan(q, node()); err == nil || !strings.Contains(err.Error(), `"eth9" not found`) {
		t.Fatalf("missing underlay: %v", err)
	}
}

// TestValidateTunnels refuses tunnels the kernel would make wrong.
func TestValidateTunnels(t *testing.T) {
	for name, tc := range map[string]struct {
		ifc  Interface
		want string
	}{
		"wireguard mac":         {func() Interface { i := wgNet(); i.MAC = net.HardwareAddr{2, 0, 0, 0, 0, 1}; return i }(), "mac: a wireguard device has none"},
		"wireguard key":         {func() Interface { i := wgNet(); i.Tunnel.PeerPublicKey = "x"; return i }(), "base64 of 32 bytes"},
		"wireguard no tunnel":   {func() Interface { i := wgNet(); i.Tunnel = nil; return i }(), "needs one"},
		"vxlan vni 0":           {func() Interface { i := vxNet(); i.Tunnel.VNI = 0; return i }(), "tunnel vni 0"},
		"vxlan loopback":        {func() Interface { i := vxNet(); i.Tunnel.Remote = netip.MustParseAddrPort("127.0.0.1:4789"); return i }(), "unicast"},
		"vxlan local family":    {func() Interface { i := vxNet(); i.Tunnel.Local = net.ParseIP("fd00::1"); return i }(), "remote's family"},
		"tunnel on a bridge":    {func() Interface { i := bridgeNet(); i.Tunnel = vxNet().Tunnel; return i }(), "tunnel: not used by kind"},
		"vxlan with a peer key": {func() Interface { i := vxNet(); i.Tunnel.PeerPublicKey = testPeerKey; return i }(), "not used by a vxlan tunnel"},
	} {
		if _, err := Plan(pod(tc.ifc), node()); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
}
