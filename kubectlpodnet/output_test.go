package kubectlpodnet

import (
	"strings"
	"testing"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/policy"
)

func TestWriteNetworks(t *testing.T) {
	o := policy.Offers{Namespace: "t1", Enabled: true,
		Networks: []policy.OfferedNetwork{
			{Name: "data", Profiles: []policy.OfferingProfile{{Name: "a", MaxInterfaces: 2}, {Name: "b", MaxInterfaces: 4}}, Limits: "bridge pnbr-data, mtu fixed"},
			{Name: "l2", Profiles: []policy.OfferingProfile{{Name: "a", MaxInterfaces: 2}}, Unusable: "offered differently"},
		},
		Primary: []policy.OfferedPrimary{{Profile: "a", MTU: "1280-8900"}},
	}
	var b strings.Builder
	if err := writeNetworks(&b, o); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"NETWORK PROFILES LIMITS",
		"data a (max 2 interfaces), b (max 4 interfaces) bridge pnbr-data, mtu fixed",
		"l2 a (max 2 interfaces) unusable: offered differently",
		"eth0 (primary) a mtu 1280-8900",
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	for i := range lines {
		lines[i] = strings.Join(strings.Fields(lines[i]), " ")
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("table:\n%s", b.String())
	}
	b.Reset()
	if err := writeNetworks(&b, policy.Offers{Summary: `namespace "t2" is not opted in`}); err != nil || b.String() != "namespace \"t2\" is not opted in\n" {
		t.Fatalf("empty offers: %v %q", err, b.String())
	}
}

func TestInterfaceDetailsShowsTheMACRange(t *testing.T) {
	i := v1alpha1.ApprovedInterface{Bridge: "pnbr-m", MACRange: &v1alpha1.ApprovedMACRange{Start: "02:00:00:00:00:00", End: "02:00:00:00:00:0f"}}
	if got := interfaceDetails(i); got != "bridge pnbr-m, mac from 02:00:00:00:00:00-02:00:00:00:00:0f" {
		t.Errorf("details %q", got)
	}
	i.MAC = "02:00:00:00:00:07"
	if got := interfaceDetails(i); got != "bridge pnbr-m, mac 02:00:00:00:00:07" {
		t.Errorf("details of a static MAC %q", got)
	}
}

// TestExplainShowsTheTunnelKey: explain prints an attached WireGuard
// tunnel's endpoint and the pod's public key from the network-status.
func TestExplainShowsTheTunnelKey(t *testing.T) {
	var b strings.Builder
	writeAttached(&b, Explanation{Attached: []v1alpha1.NetworkStatus{{
		Name: "t1/wg", Interface: "net1", MTU: 1420,
		Tunnel: &v1alpha1.TunnelStatus{Kind: v1alpha1.KindWireGuard, Endpoint: "203.0.113.9:51821", PublicKey: "cHVibGljIGtleQ=="},
	}}})
	for _, want := range []string{"Tunnel net1:  wireguard to 203.0.113.9:51821", "public key: cHVibGljIGtleQ== (register it with the peer)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("explain does not say %q:\n%s", want, b.String())
		}
	}
	i := v1alpha1.ApprovedInterface{Kind: v1alpha1.KindVXLANTunnel, Tunnel: &v1alpha1.ApprovedTunnel{Endpoint: "198.51.100.7:4789", VNI: 5001}}
	if got := interfaceDetails(i); got != "endpoint 198.51.100.7:4789, vni 5001" {
		t.Errorf("details %q", got)
	}
}

// TestInterfaceDetailsShowsTheTuning: settings, offloads, SLAAC and the
// wire checks an approval grants are in its one-line summary.
func TestInterfaceDetailsShowsTheTuning(t *testing.T) {
	i := v1alpha1.ApprovedInterface{Bridge: "pnbr-t", SLAAC: true, CheckDuplicates: true,
		Settings: map[string]int64{"txqueuelen": 500, "arp_ignore": 1}, Offloads: map[string]bool{"rx-gro": false}}
	if got, want := interfaceDetails(i), "bridge pnbr-t, slaac, arp_ignore 1, txqueuelen 500, rx-gro off, address check"; got != want {
		t.Fatalf("interfaceDetails = %q, want %q", got, want)
	}
}
