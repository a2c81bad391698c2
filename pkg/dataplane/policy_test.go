package dataplane

import (
	"net/netip"
	"strings"
	"testing"

	"podnet.io/podnet/pkg/portsecurity"
)

// TestPolicyFingerprint: two policies share a fingerprint only when they
// write the same elements, so an unchanged policy is never written again
// and a changed one always is.
func TestPolicyFingerprint(t *testing.T) {
	allow := func(peer string, proto uint8, lo, hi uint16) portsecurity.Allow {
		return portsecurity.Allow{Peer: netip.MustParsePrefix(peer), Protocol: proto, PortLo: lo, PortHi: hi}
	}
	base := portsecurity.PolicyPort{Port: "net1", In: portsecurity.PolicyDirection{Isolated: true, Allow: []portsecurity.Allow{allow("10.0.0.1/32", 6, 80, 80)}}}
	with := func(f func(p *portsecurity.PolicyPort)) portsecurity.PolicyPort {
		p := base
		p.In.Allow = append([]portsecurity.Allow(nil), base.In.Allow...)
		f(&p)
		return p
	}
	same := with(func(*portsecurity.PolicyPort) {})
	if policyFingerprint(same) != policyFingerprint(base) || policyFingerprint(base) == "" {
		t.Fatal("the same policy has another fingerprint, or none")
	}
	for name, p := range map[string]portsecurity.PolicyPort{
		"peer":              with(func(p *portsecurity.PolicyPort) { p.In.Allow[0].Peer = netip.MustParsePrefix("10.0.0.2/32") }),
		"prefix length":     with(func(p *portsecurity.PolicyPort) { p.In.Allow[0].Peer = netip.MustParsePrefix("10.0.0.1/31") }),
		"family":            with(func(p *portsecurity.PolicyPort) { p.In.Allow[0].Peer = netip.MustParsePrefix("::ffff:10.0.0.1/128") }),
		"protocol":          with(func(p *portsecurity.PolicyPort) { p.In.Allow[0].Protocol = 17 }),
		"any protocol":      with(func(p *portsecurity.PolicyPort) { p.In.Allow[0].AnyProtocol = true }),
		"ports":             with(func(p *portsecurity.PolicyPort) { p.In.Allow[0].PortHi = 81 }),
		"one more allow":    with(func(p *portsecurity.PolicyPort) { p.In.Allow = append(p.In.Allow, allow("10.0.0.3/32", 6, 80, 80)) }),
		"nothing allowed":   with(func(p *portsecurity.PolicyPort) { p.In.Allow = nil }),
		"not isolated":      with(func(p *portsecurity.PolicyPort) { p.In.Isolated = false }),
		"other direction":   with(func(p *portsecurity.PolicyPort) { p.In, p.Out = p.Out, p.In }),
		"egress isolated":   with(func(p *portsecurity.PolicyPort) { p.Out.Isolated = true }),
		"allow moved to in": with(func(p *portsecurity.PolicyPort) { p.Out = p.In; p.In = portsecurity.PolicyDirection{Isolated: true} }),
	} {
		if policyFingerprint(p) == policyFingerprint(base) {
			t.Errorf("a policy with another %s has the same fingerprint", name)
		}
	}
}

// TestPolicyInAVRFIsNotEnforceable: an isolated interface in a VRF is
// refused (the pod's filter cannot see its traffic under its own name);
// one that is not isolated, or not in a VRF, is fine.
func TestPolicyInAVRFIsNotEnforceable(t *testing.T) {
	isolated := portsecurity.PolicyDirection{Isolated: true}
	vrf := &VRF{Name: "red", Table: 1001}
	for _, tc := range []struct {
		ifc  Interface
		want bool // refused
	}{
		{Interface{Name: "net1", VRF: vrf, PolicyIn: isolated}, true},
		{Interface{Name: "net1", VRF: vrf, PolicyOut: isolated}, true},
		{Interface{Name: "net1", VRF: vrf}, false},
		{Interface{Name: "net1", PolicyIn: isolated}, false},
	} {
		err := tc.ifc.enforceable()
		if (err != nil) != tc.want {
			t.Errorf("%+v: enforceable() = %v, want refused %v", tc.ifc, err, tc.want)
		}
		if err != nil && !strings.Contains(err.Error(), "VRF red") {
			t.Errorf("refusal %q does not name the VRF", err)
		}
	}
}
