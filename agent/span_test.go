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

// fakeUnderlays answers from fixed node addresses and records the asks.
type fakeUnderlays struct {
	asked []string
	err   error
}

func (f *fakeUnderlays) Underlay(_ context.Context, bridge string, family corev1.IPFamily) (net.IP, []net.IP, error) {
	f.asked = append(f.asked, bridge+"/"+string(family))
	if f.err != nil {
		return nil, nil, f.err
	}
	if family == corev1.IPv6Protocol {
		return net.ParseIP("fd00::1"), []net.IP{net.ParseIP("fd00::2")}, nil
	}
	return net.ParseIP("10.0.0.1").To4(), []net.IP{net.ParseIP("10.0.0.2").To4()}, nil
}

func TestResolveSpans(t *testing.T) {
	pod := func(vx *dataplane.VXLAN) dataplane.Pod {
		return dataplane.Pod{Interfaces: []dataplane.Interface{
			{Name: "net1", Kind: dataplane.KindBridge, Bridge: "pnbr-local"},
			{Name: "net2", Kind: dataplane.KindBridge, Bridge: "pnbr-vx", VXLAN: vx},
		}}
	}
	for _, tc := range []struct {
		name      string
		vx        *dataplane.VXLAN
		wantAsked string
		wantLocal string
		wantPeers string
	}{
		{"source from the Node", &dataplane.VXLAN{VNI: 7}, "[pnbr-vx/IPv4]", "10.0.0.1", "[10.0.0.2]"},
		{"IPv6 source named by the approval", &dataplane.VXLAN{VNI: 7, Local: net.ParseIP("fd00::9")}, "[pnbr-vx/IPv6]", "fd00::9", "[fd00::2]"},
		{"IPv4 source named by the approval", &dataplane.VXLAN{VNI: 7, Local: net.ParseIP("10.9.9.9")}, "[pnbr-vx/IPv4]", "10.9.9.9", "[10.0.0.2]"},
		{"underlay interface: the kernel picks the source", &dataplane.VXLAN{VNI: 7, Dev: "eth1"}, "[pnbr-vx/IPv4]", "<nil>", "[10.0.0.2]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := &fakeUnderlays{}
			r := &Reconciler{Underlays: u}
			p := pod(tc.vx)
			if err := r.resolveSpans(context.Background(), &p); err != nil {
				t.Fatal(err)
			}
			vx := p.Interfaces[1].VXLAN
			if fmt.Sprint(u.asked) != tc.wantAsked || vx.Local.String() != tc.wantLocal || fmt.Sprint(vx.Peers) != tc.wantPeers {
				t.Fatalf("asked %v, local %v, peers %v; want %s, %s, %s", u.asked, vx.Local, vx.Peers, tc.wantAsked, tc.wantLocal, tc.wantPeers)
			}
			if p.Interfaces[0].VXLAN != nil {
				t.Fatal("a node-local bridge got an overlay")
			}
		})
	}
	t.Run("no VXLAN asks nothing", func(t *testing.T) {
		r := &Reconciler{}
		p := pod(nil)
		if err := r.resolveSpans(context.Background(), &p); err != nil {
			t.Fatalf("a pod without VXLAN needs no peer source: %v", err)
		}
	})
	t.Run("no peer source", func(t *testing.T) {
		p := pod(&dataplane.VXLAN{VNI: 7})
		if err := (&Reconciler{}).resolveSpans(context.Background(), &p); err == nil || !strings.Contains(err.Error(), "no source of peer nodes") {
			t.Fatalf("err = %v, want one saying the agent has no peer source", err)
		}
	})
	t.Run("error names the interface", func(t *testing.T) {
		p := pod(&dataplane.VXLAN{VNI: 7})
		r := &Reconciler{Underlays: &fakeUnderlays{err: errors.New(`node "n1" has no IPv4 InternalIP`)}}
		if err := r.resolveSpans(context.Background(), &p); err == nil || !strings.Contains(err.Error(), `interface "net2"`) || !strings.Contains(err.Error(), "no IPv4 InternalIP") {
			t.Fatalf("err = %v, want the interface and the cause", err)
		}
	})
}
