package peers_test

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"podnet.io/podnet/agent/peers"
	"podnet.io/podnet/pkg/dataplane"
	"podnet.io/podnet/pkg/underlay"
)

// TestTrackTunnelsReservesPortAndVNI: the node's one VXLAN device per
// port and VNI is reserved for one holder before any lock: a second pod's
// tunnel of the first's port and VNI is refused naming the first pod, a
// tunnel of a spanning network's port and VNI naming the bridge (present
// as a device, or only tracked), a spanning bridge of a pod tunnel's port
// and VNI naming the pod; no refusal changes the table, and the first
// pod's remote stays the only one its VNI admits.
func TestTrackTunnelsReservesPortAndVNI(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}}}}
	c := fake.NewClientBuilder().WithObjects(node).Build()
	rec := newRecorder()
	w := &peers.Watch{NodeName: "n1", Nodes: c, Writer: c, Dataplane: rec, Lock: rec, Resync: time.Hour}
	ctx := context.Background()
	rec.setDevice("pnbr-dev", &dataplane.SpanDevice{VNI: 8, Port: 4789})
	if err := w.Track(ctx, "pnbr-v4", peers.Span{VNI: 7, Port: 4789, Family: corev1.IPv4Protocol}); err != nil {
		t.Fatal(err)
	}
	tun := func(vni uint32, remote string) []underlay.Tunnel {
		return []underlay.Tunnel{underlay.PointToPoint(4789, vni, underlay.IPv4, []netip.Addr{netip.MustParseAddr(remote)})}
	}
	if err := w.TrackTunnels(ctx, "uid-a", "ta/a", tun(5001, "198.51.100.7")); err != nil {
		t.Fatal(err)
	}
	before := rec.tunnelRemotes(5001)
	for _, tc := range []struct {
		name string
		try  func() error
		want string
	}{
		{"another pod's port and vni", func() error { return w.TrackTunnels(ctx, "uid-b", "tb/b", tun(5001, "198.51.100.8")) }, `vxlan port 4789 vni 5001: already held on this node by pod "ta/a"`},
		{"a tracked spanning bridge's", func() error { return w.TrackTunnels(ctx, "uid-b", "tb/b", tun(7, "198.51.100.8")) }, `spanning bridge "pnbr-v4"`},
		{"a spanning device's", func() error { return w.TrackTunnels(ctx, "uid-b", "tb/b", tun(8, "198.51.100.8")) }, `spanning bridge "pnbr-dev"`},
		{"a spanning bridge of a pod's tunnel", func() error {
			return w.Track(ctx, "pnbr-x", peers.Span{VNI: 5001, Port: 4789, Family: corev1.IPv4Protocol})
		}, `pod "ta/a"`},
	} {
		err := tc.try()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %s", tc.name, err, tc.want)
		}
		if got := rec.tunnelRemotes(5001); got != "[198.51.100.7]" || got != before {
			t.Errorf("%s: tunnel 5001 admits %s, want only the first pod's remote", tc.name, got)
		}
		for _, vni := range []int{7, 8} {
			if got := rec.tunnelRemotes(vni); got != "-" {
				t.Errorf("%s: a refused tunnel locked vni %d to %s", tc.name, vni, got)
			}
		}
	}
	if err := w.TrackTunnels(ctx, "uid-a", "ta/a", nil); err != nil {
		t.Fatal(err)
	}
	if err := w.TrackTunnels(ctx, "uid-b", "tb/b", tun(5001, "198.51.100.8")); err != nil {
		t.Fatalf("once the first pod let go: %v", err)
	}
	if got := rec.tunnelRemotes(5001); got != "[198.51.100.8]" {
		t.Fatalf("the second pod's tunnel is locked to %s", got)
	}
}
