package agent

import (
	"net"
	"reflect"
	"strings"
	"testing"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/dataplane"
)

func TestPlanPodCarriesTheSpanningPort(t *testing.T) {
	a := &v1alpha1.Approval{Interfaces: []v1alpha1.ApprovedInterface{
		{Interface: "net1", Network: "overlay", Kind: v1alpha1.KindBridge, Bridge: "pnbr-o", MTU: 1450,
			VXLAN: &v1alpha1.ApprovedVXLAN{VNI: 1001, Port: 4789, LocalInterface: "eth0", LocalAddress: "fd99::1"}},
		{Interface: "net2", Network: "fabric", Kind: v1alpha1.KindBridge, Bridge: "pnbr-f", Uplink: "eth1"},
	}}
	p, err := planPod("uid", "/run/netns/x", a, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []dataplane.Interface{
		{Name: "net1", Kind: dataplane.KindBridge, Bridge: "pnbr-o", MTU: 1450,
			VXLAN: &dataplane.VXLAN{VNI: 1001, Port: 4789, Dev: "eth0", Local: net.ParseIP("fd99::1")}},
		{Name: "net2", Kind: dataplane.KindBridge, Bridge: "pnbr-f", Uplink: "eth1"},
	}
	if !reflect.DeepEqual(p.Interfaces, want) {
		t.Fatalf("interfaces:\n got %+v %+v\nwant %+v %+v", p.Interfaces[0], p.Interfaces[0].VXLAN, want[0], want[0].VXLAN)
	}

	a.Interfaces[0].VXLAN.LocalAddress = "node-1"
	if _, err := planPod("uid", "/run/netns/x", a, nil, nil); err == nil || !strings.Contains(err.Error(), `vxlan.localAddress "node-1"`) {
		t.Fatalf("bad local address: got %v", err)
	}
}

func TestWithUnderlayFillsLocalAndPeersOfTheFamily(t *testing.T) {
	ip := net.ParseIP
	p := dataplane.Pod{Interfaces: []dataplane.Interface{
		{Name: "net1", Kind: dataplane.KindBridge, Bridge: "b4", VXLAN: &dataplane.VXLAN{VNI: 1}},
		{Name: "net2", Kind: dataplane.KindBridge, Bridge: "b6", VXLAN: &dataplane.VXLAN{VNI: 2, Local: ip("fd00::1")}},
		{Name: "net3", Kind: dataplane.KindBridge, Bridge: "bd", VXLAN: &dataplane.VXLAN{VNI: 3, Dev: "eth1"}},
		{Name: "net4", Kind: dataplane.KindBridge, Bridge: "bu", Uplink: "eth2"},
	}}
	nodeIPs := []net.IP{ip("fd00::1"), ip("10.0.0.1")}
	peerIPs := []net.IP{ip("10.0.0.2"), ip("fd00::2"), ip("10.0.0.3")}
	got := withUnderlay(p, nodeIPs, peerIPs)
	v4 := []net.IP{ip("10.0.0.2").To4(), ip("10.0.0.3").To4()}
	want := []*dataplane.VXLAN{
		{VNI: 1, Local: ip("10.0.0.1").To4(), Peers: v4},
		{VNI: 2, Local: ip("fd00::1"), Peers: []net.IP{ip("fd00::2")}},
		{VNI: 3, Dev: "eth1", Peers: v4},
		nil,
	}
	for i, w := range want {
		if !reflect.DeepEqual(got.Interfaces[i].VXLAN, w) {
			t.Errorf("%s: got %+v, want %+v", got.Interfaces[i].Name, got.Interfaces[i].VXLAN, w)
		}
	}
	if p.Interfaces[0].VXLAN.Local != nil || p.Interfaces[0].VXLAN.Peers != nil {
		t.Error("withUnderlay changed its input")
	}
}
