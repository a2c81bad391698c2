package dataplane

import (
	"net"
	"net/netip"
	"testing"
)

// FuzzPlan checks, for arbitrary interfaces, that planning never panics and
// that a plan, once carried out, leaves nothing to do: the second apply of
// the same pod is a no-op.
func FuzzPlan(f *testing.F) {
	f.Add("net1", uint8(0), "pnbr-a", 0, 9000, []byte{2, 0, 0, 0, 0, 1}, "192.168.1.5", uint8(24), "10.0.0.0", uint8(8), "", 1500, uint8(0))
	f.Add("net2", uint8(1), "", 0, 0, []byte(nil), "fd00::5", uint8(64), "fd00:1::", uint8(64), "private", 0, uint8(1))
	f.Add("net3", uint8(3), "", 100, 1400, []byte(nil), "10.9.9.9", uint8(16), "", uint8(0), "", 0, uint8(2))
	f.Add("net4", uint8(0), "admin-br", 7, 0, []byte(nil), "10.9.9.9", uint8(16), "", uint8(0), "", 0, uint8(3))
	f.Add("net5", uint8(0), "pnbr-s", 0, 1450, []byte(nil), "10.9.9.2", uint8(24), "10.9.9.1", uint8(32), "", 0, uint8(2))
	f.Add("net6", uint8(0), "pnbr-u", 0, 0, []byte(nil), "10.9.9.9", uint8(16), "", uint8(0), "eth2", 0, uint8(5))
	f.Add("net7", uint8(5), "", 4789, 1420, []byte(nil), "10.70.0.2", uint8(24), "203.0.113.9", uint8(32), "", 0, uint8(8))
	f.Add("net8", uint8(6), "", 4789, 5001, []byte(nil), "10.71.0.2", uint8(24), "198.51.100.7", uint8(32), "eth1", 0, uint8(9))
	f.Add("net9", uint8(1), "", 1001, 0, []byte(nil), "fd00::5", uint8(64), "fd00:1::", uint8(64), "red", 0, uint8(17))
	f.Add("net10", uint8(0), "pnbr-a", 1001, 0, []byte(nil), "10.9.9.9", uint8(16), "10.0.0.0", uint8(8), "old", 0, uint8(16))
	kinds := []Kind{KindBridge, KindMacvlan, KindIPVlan, KindVLAN, "bogus", KindWireGuard, KindVXLANTunnel}
	f.Fuzz(func(t *testing.T, name string, kind uint8, bridge string, vlan, mtu int, mac []byte, addr string, prefix uint8, dst string, dstPrefix uint8, mode string, primary int, existing uint8) {
		ifc := Interface{Name: name, Kind: kinds[int(kind)%len(kinds)], Bridge: bridge, VLAN: vlan, MTU: mtu, Mode: mode}
		if ifc.Kind != KindBridge {
			ifc.Master, ifc.Bridge = "eth1", ""
		}
		// Tunnel kinds: the route's destination is the remote, vlan its
		// port, mtu the VNI, mode the underlay interface.
		if ifc.Kind == KindWireGuard || ifc.Kind == KindVXLANTunnel || existing&8 != 0 {
			remote, _ := netip.ParseAddr(dst)
			ifc.Tunnel = &Tunnel{Remote: netip.AddrPortFrom(remote, uint16(vlan)), VNI: mtu, Dev: mode, PeerPublicKey: "HIgo9xNzJMWLKASShiTqIybxZ0U3wGLiUeJ1PKf8ykw="}
			if ifc.Kind == KindVXLANTunnel {
				ifc.Tunnel.PeerPublicKey = ""
			} else {
				ifc.Tunnel.VNI, ifc.Tunnel.Dev = 0, ""
			}
			ifc.Master, ifc.Mode, ifc.VLAN = "", "", 0
		}
		if mac != nil {
			ifc.MAC = net.HardwareAddr(mac)
		}
		// Spare bits of existing make the network span nodes.
		switch {
		case existing&2 != 0:
			ifc.VXLAN = &VXLAN{VNI: mtu, Port: vlan, Local: net.ParseIP(dst), Peers: []net.IP{net.ParseIP(addr)}}
		case existing&4 != 0:
			ifc.Uplink = mode
		}
		// Another spare bit puts it into a VRF named by mode.
		if existing&16 != 0 {
			ifc.VRF = &VRF{Name: mode, Table: uint32(vlan)}
		}
		if ip := net.ParseIP(addr); ip != nil {
			bits := 128
			if ip.To4() != nil {
				ip, bits = ip.To4(), 32
			}
			ifc.Addresses = []net.IPNet{{IP: ip, Mask: net.CIDRMask(int(prefix)%(bits+1), bits)}}
		}
		if ip := net.ParseIP(dst); ip != nil {
			bits := 128
			if ip.To4() != nil {
				ip, bits = ip.To4(), 32
			}
			ifc.Routes = []Route{{Dst: net.IPNet{IP: ip, Mask: net.CIDRMask(int(dstPrefix)%(bits+1), bits)}}}
		}
		p := pod(ifc)
		p.PrimaryMTU = primary

		// Start from an empty pod, or from one where some other podnet
		// interface of each kind already exists.
		s := node()
		if existing%2 == 1 {
			old := bridgeNet()
			old.VRF = &VRF{Name: "red", Table: 1001}
			s = simulate(p.UID, s, mustPlan(pod(old, Interface{Name: "old", Kind: KindMacvlan, Master: "eth1"}), s))
		}
		steps, _ := Plan(p, s)
		after := simulate(p.UID, s, steps)
		again, err := Plan(p, after)
		if len(again) != 0 {
			t.Fatalf("not converged: %v then %v (err %v)", steps, again, err)
		}
	})
}

func mustPlan(p Pod, s State) []Step {
	steps, err := Plan(p, s)
	if err != nil {
		panic(err)
	}
	return steps
}
