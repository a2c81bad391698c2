package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"

	"podnet.io/podnet/agent/peers"
	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/dataplane"
)

// fakeUnderlays answers with fixed node addresses and records what the
// reconciler tracks.
type fakeUnderlays struct {
	asked    int
	own      []net.IP
	tracked  []string
	err      error
	trackErr error
}

func (f *fakeUnderlays) NodeAddresses(context.Context, peers.Span) (own, others []net.IP, err error) {
	f.asked++
	if f.err != nil {
		return nil, nil, f.err
	}
	own = f.own
	if own == nil {
		own = []net.IP{net.ParseIP("10.0.0.1").To4(), net.ParseIP("fd00::1")}
	}
	return own, []net.IP{net.ParseIP("10.0.0.2").To4(), net.ParseIP("fd00::2")}, nil
}

func (f *fakeUnderlays) Track(_ context.Context, bridge string, s peers.Span) error {
	f.tracked = append(f.tracked, fmt.Sprintf("%s/%s/%d/%d%v", bridge, s.Family, s.VNI, s.Port, s.CIDRs))
	return f.trackErr
}

// TestResolveSpans: the glue between the reconciler, withUnderlay and the
// peer watch — only VXLAN interfaces are completed and tracked (with their
// underlay's family, port and the approval's underlay CIDRs), a source
// the network does not allow is refused before anything is tracked, and a
// failure names its cause.
func TestResolveSpans(t *testing.T) {
	pod := func(vx *dataplane.VXLAN) dataplane.Pod {
		return dataplane.Pod{Interfaces: []dataplane.Interface{
			{Name: "net1", Kind: dataplane.KindBridge, Bridge: "pnbr-local"},
			{Name: "net2", Kind: dataplane.KindBridge, Bridge: "pnbr-vx", VXLAN: vx},
		}}
	}
	approval := &v1alpha1.Approval{Interfaces: []v1alpha1.ApprovedInterface{
		{Interface: "net2", VXLAN: &v1alpha1.ApprovedVXLAN{VNI: 7, Port: 4789, UnderlayCIDRs: []string{"10.0.0.0/24", "fd00::/64"}}},
	}}
	for _, tc := range []struct {
		name        string
		vx          *dataplane.VXLAN
		wantTracked string
		wantLocal   string
		wantPeers   string
	}{
		{"source from the Node", &dataplane.VXLAN{VNI: 7}, "[pnbr-vx/IPv4/7/4789[10.0.0.0/24 fd00::/64]]", "10.0.0.1", "[10.0.0.2]"},
		{"IPv6 source named by the approval", &dataplane.VXLAN{VNI: 7, Port: 4790, Local: net.ParseIP("fd00::9")}, "[pnbr-vx/IPv6/7/4790[10.0.0.0/24 fd00::/64]]", "fd00::9", "[fd00::2]"},
		{"underlay interface: the kernel picks the source", &dataplane.VXLAN{VNI: 7, Dev: "eth1"}, "[pnbr-vx/IPv4/7/4789[10.0.0.0/24 fd00::/64]]", "<nil>", "[10.0.0.2]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := &fakeUnderlays{}
			got, err := (&Reconciler{Underlays: u}).resolveSpans(context.Background(), pod(tc.vx), approval)
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
	for _, tc := range []struct {
		name string
		own  string
		a    *v1alpha1.Approval
		want string
	}{
		{"own address outside the underlay", "10.0.1.1", approval, "outside underlay.cidrs"},
		{"own address loopback, nothing declared", "127.0.0.2", nil, "never carry an overlay"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := &fakeUnderlays{own: []net.IP{net.ParseIP(tc.own).To4()}}
			_, err := (&Reconciler{Underlays: u}).resolveSpans(context.Background(), pod(&dataplane.VXLAN{VNI: 7}), tc.a)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `interface "net2": vxlan vni 7`) {
				t.Fatalf("err = %v, want one naming net2, vni 7 and %q", err, tc.want)
			}
			if len(u.tracked) != 0 {
				t.Fatalf("a refused source was tracked: %v", u.tracked)
			}
		})
	}
	t.Run("no VXLAN asks nothing", func(t *testing.T) {
		u := &fakeUnderlays{}
		if _, err := (&Reconciler{Underlays: u}).resolveSpans(context.Background(), pod(nil), nil); err != nil || u.asked != 0 || len(u.tracked) != 0 {
			t.Fatalf("a pod without VXLAN: err %v, %d asks, tracked %v; want none", err, u.asked, u.tracked)
		}
		if _, err := (&Reconciler{}).resolveSpans(context.Background(), pod(nil), nil); err != nil {
			t.Fatalf("a pod without VXLAN needs no peer source: %v", err)
		}
	})
	t.Run("no peer source", func(t *testing.T) {
		if _, err := (&Reconciler{}).resolveSpans(context.Background(), pod(&dataplane.VXLAN{VNI: 7}), nil); err == nil || !strings.Contains(err.Error(), "no source of peer nodes") {
			t.Fatalf("err = %v, want one saying the agent has no peer source", err)
		}
	})
	t.Run("a failed read names its cause", func(t *testing.T) {
		r := &Reconciler{Underlays: &fakeUnderlays{err: errors.New("list nodes from the cache: boom")}}
		if _, err := r.resolveSpans(context.Background(), pod(&dataplane.VXLAN{VNI: 7}), nil); err == nil || !strings.Contains(err.Error(), "vxlan underlay: list nodes") {
			t.Fatalf("err = %v, want the cause", err)
		}
	})
	t.Run("no lock, no device", func(t *testing.T) {
		r := &Reconciler{Underlays: &fakeUnderlays{trackErr: errors.New("nftables: boom")}}
		if _, err := r.resolveSpans(context.Background(), pod(&dataplane.VXLAN{VNI: 7}), nil); err == nil || !strings.Contains(err.Error(), "lock the node's tunnel port: nftables: boom") {
			t.Fatalf("err = %v, want the lock's failure", err)
		}
	})
}
