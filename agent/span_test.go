package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"podnet.io/podnet/pkg/dataplane"
)

// fakeUnderlays answers with fixed node addresses and records what the
// reconciler tracks.
type fakeUnderlays struct {
	asked   int
	tracked []string
	err     error
}

func (f *fakeUnderlays) NodeAddresses(context.Context) (own, others []net.IP, err error) {
	f.asked++
	if f.err != nil {
		return nil, nil, f.err
	}
	return []net.IP{net.ParseIP("10.0.0.1").To4(), net.ParseIP("fd00::1")},
		[]net.IP{net.ParseIP("10.0.0.2").To4(), net.ParseIP("fd00::2")}, nil
}

func (f *fakeUnderlays) Track(bridge string, family corev1.IPFamily) {
	f.tracked = append(f.tracked, bridge+"/"+string(family))
}

// TestResolveSpans: the glue between the reconciler, withUnderlay and the
// peer watch — only VXLAN interfaces are completed and tracked, in their
// underlay's family, and a failure names its cause.
func TestResolveSpans(t *testing.T) {
	pod := func(vx *dataplane.VXLAN) dataplane.Pod {
		return dataplane.Pod{Interfaces: []dataplane.Interface{
			{Name: "net1", Kind: dataplane.KindBridge, Bridge: "pnbr-local"},
			{Name: "net2", Kind: dataplane.KindBridge, Bridge: "pnbr-vx", VXLAN: vx},
		}}
	}
	for _, tc := range []struct {
		name        string
		vx          *dataplane.VXLAN
		wantTracked string
		wantLocal   string
		wantPeers   string
	}{
		{"source from the Node", &dataplane.VXLAN{VNI: 7}, "[pnbr-vx/IPv4]", "10.0.0.1", "[10.0.0.2]"},
		{"IPv6 source named by the approval", &dataplane.VXLAN{VNI: 7, Local: net.ParseIP("fd00::9")}, "[pnbr-vx/IPv6]", "fd00::9", "[fd00::2]"},
		{"underlay interface: the kernel picks the source", &dataplane.VXLAN{VNI: 7, Dev: "eth1"}, "[pnbr-vx/IPv4]", "<nil>", "[10.0.0.2]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := &fakeUnderlays{}
			got, err := (&Reconciler{Underlays: u}).resolveSpans(context.Background(), pod(tc.vx))
			if err != nil {
				t.Fatal(err)
			}
			vx := got.Interfaces[1].VXLAN
			if fmt.Sprint(u.tracked) != tc.wantTracked || vx.Local.String() != tc.wantLocal || fmt.Sprint(vx.Peers) != tc.wantPeers {
				t.Fatalf("tracked %v, local %v, peers %v; want %s, %s, %s", u.tracked, vx.Local, vx.Peers, tc.wantTracked, tc.wantLocal, tc.wantPeers)
			}
			if got.Interfaces[0].VXLAN != nil {
				t.Fatal("a node-local bridge got an overlay")
			}
		})
	}
	t.Run("no VXLAN asks nothing", func(t *testing.T) {
		u := &fakeUnderlays{}
		if _, err := (&Reconciler{Underlays: u}).resolveSpans(context.Background(), pod(nil)); err != nil || u.asked != 0 || len(u.tracked) != 0 {
			t.Fatalf("a pod without VXLAN: err %v, %d asks, tracked %v; want none", err, u.asked, u.tracked)
		}
		if _, err := (&Reconciler{}).resolveSpans(context.Background(), pod(nil)); err != nil {
			t.Fatalf("a pod without VXLAN needs no peer source: %v", err)
		}
	})
	t.Run("no peer source", func(t *testing.T) {
		if _, err := (&Reconciler{}).resolveSpans(context.Background(), pod(&dataplane.VXLAN{VNI: 7})); err == nil || !strings.Contains(err.Error(), "no source of peer nodes") {
			t.Fatalf("err = %v, want one saying the agent has no peer source", err)
		}
	})
	t.Run("a failed read names its cause", func(t *testing.T) {
		r := &Reconciler{Underlays: &fakeUnderlays{err: errors.New("list nodes from the cache: boom")}}
		if _, err := r.resolveSpans(context.Background(), pod(&dataplane.VXLAN{VNI: 7})); err == nil || !strings.Contains(err.Error(), "vxlan underlay: list nodes") {
			t.Fatalf("err = %v, want the cause", err)
		}
	})
}
