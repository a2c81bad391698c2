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
	p, err := planPod("uid", "/run/netns/x", a, nil)
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
	if _, err := planPod("uid", "/run/netns/x", a, nil); err == nil || !strings.Contains(err.Error(), `vxlan.localAddress "node-1"`) {
		t.Fatalf("bad local address: got %v", err)
	}
}
