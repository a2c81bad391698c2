package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"podnet.io/podnet/agent/podstate"
	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/dataplane"
	"podnet.io/podnet/pkg/underlay"
)

type tunnelLockRecorder struct{ calls map[string][]underlay.Tunnel }

func (f *tunnelLockRecorder) TrackTunnels(_ context.Context, uid, _ string, ts []underlay.Tunnel) error {
	f.calls[uid] = ts
	return nil
}

// TestTunnelTranslation: an approved tunnel becomes the dataplane's, its
// VXLAN remote is locked before the device exists, and the status entry
// carries the endpoint and the public key under podnet.io/tunnel.
func TestTunnelTranslation(t *testing.T) {
	a := &v1alpha1.Approval{Interfaces: []v1alpha1.ApprovedInterface{{
		Interface: "net1", Network: "wg", Kind: v1alpha1.KindWireGuard,
		Tunnel: &v1alpha1.ApprovedTunnel{Endpoint: "203.0.113.9:51821", PeerPublicKey: "HIgo9xNzJMWLKASShiTqIybxZ0U3wGLiUeJ1PKf8ykw=", AllowedIPs: []string{"10.70.0.0/24"}},
	}, {
		Interface: "net2", Network: "vx", Kind: v1alpha1.KindVXLANTunnel,
		Tunnel: &v1alpha1.ApprovedTunnel{Endpoint: "198.51.100.7:4789", VNI: 5001, LocalInterface: "eth1", LocalAddress: "192.0.2.10"},
	}}}
	p, err := planPod("uid-1", "/run/netns/x", a, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	wg, vx := p.Interfaces[0].Tunnel, p.Interfaces[1].Tunnel
	if wg == nil || wg.Remote.String() != "203.0.113.9:51821" || len(wg.AllowedIPs) != 1 || vx == nil || vx.VNI != 5001 || vx.Dev != "eth1" || vx.Local.String() != "192.0.2.10" {
		t.Fatalf("translated %+v %+v", wg, vx)
	}
	lock := &tunnelLockRecorder{calls: map[string][]underlay.Tunnel{}}
	r := &Reconciler{Tunnels: lock}
	if err := r.lockTunnels(context.Background(), podstate.Ref{Namespace: "t1", Name: "p", UID: "uid-1"}, p); err != nil {
		t.Fatal(err)
	}
	if got := lock.calls["uid-1"]; len(got) != 1 || got[0].Name != "tun-4789-5001" || got[0].Peers[0].String() != "198.51.100.7" {
		t.Fatalf("locked %+v", got)
	}
	if err := (&Reconciler{}).lockTunnels(context.Background(), podstate.Ref{UID: "uid-1"}, p); err == nil || !strings.Contains(err.Error(), "no tunnel lock") {
		t.Fatalf("an agent without a lock made a vxlan tunnel: %v", err)
	}
	status := networkStatus("t1", v1alpha1.NetworkStatus{Default: true}, a, []dataplane.InterfaceStatus{{Name: "net1", PublicKey: "cHVibGlj"}, {Name: "net2"}})
	b, _ := json.Marshal(status[1:])
	for _, want := range []string{`"podnet.io/tunnel":{"kind":"wireguard","endpoint":"203.0.113.9:51821","publicKey":"cHVibGlj"}`, `"podnet.io/tunnel":{"kind":"vxlan-tunnel","endpoint":"198.51.100.7:4789","vni":5001}`} {
		if !strings.Contains(string(b), want) {
			t.Fatalf("status %s does not hold %s", b, want)
		}
	}
}

// TestUnmadeTunnelUnlocked: when the kernel refused a tunnel's device as
// existing, its remote leaves the lock (it would be let into the device
// that holds the port and VNI); a tunnel whose device was made, and every
// tunnel after another failure, stay locked.
func TestUnmadeTunnelUnlocked(t *testing.T) {
	a := &v1alpha1.Approval{Interfaces: []v1alpha1.ApprovedInterface{{
		Interface: "net1", Network: "vx", Kind: v1alpha1.KindVXLANTunnel,
		Tunnel: &v1alpha1.ApprovedTunnel{Endpoint: "198.51.100.7:4789", VNI: 5001},
	}, {
		Interface: "net2", Network: "vy", Kind: v1alpha1.KindVXLANTunnel,
		Tunnel: &v1alpha1.ApprovedTunnel{Endpoint: "198.51.100.8:4789", VNI: 5002},
	}}}
	p, err := planPod("uid-1", "/run/netns/x", a, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ref := podstate.Ref{Namespace: "t1", Name: "p", UID: "uid-1"}
	for _, tc := range []struct {
		name     string
		applyErr error
		want     string
	}{
		{"the second refused as existing", errors.Join(errors.New("other"),
			fmt.Errorf("pod: %w", fmt.Errorf("interface %q: create: %w", "net2", &dataplane.ExistsError{Interface: "net2", Cause: "vni 5002 taken", Err: unix.EEXIST}))), "[tun-4789-5001]"},
		{"another failure", errors.New("interface \"net2\": create: no such device"), "[tun-4789-5001 tun-4789-5002]"},
	} {
		lock := &tunnelLockRecorder{calls: map[string][]underlay.Tunnel{}}
		r := &Reconciler{Tunnels: lock}
		if err := r.lockTunnels(context.Background(), ref, p); err != nil {
			t.Fatal(err)
		}
		if err := r.unlockUnmade(context.Background(), ref, p, tc.applyErr); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tun := range lock.calls["uid-1"] {
			names = append(names, tun.Name)
		}
		if got := fmt.Sprint(names); got != tc.want {
			t.Errorf("%s: locked %s, want %s", tc.name, got, tc.want)
		}
	}
}
