package dataplane

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
)

// Tunnel is the far end of a point-to-point tunnel interface (KindWireGuard,
// KindVXLANTunnel) and, for VXLAN, the node side it leaves from.
type Tunnel struct {
	// Remote is the endpoint outside the cluster.
	Remote netip.AddrPort
	// PeerPublicKey is the WireGuard peer's public key (base64).
	PeerPublicKey string
	// AllowedIPs are the WireGuard peer's allowed IPs.
	AllowedIPs []net.IPNet
	// VNI is the VXLAN network identifier (1-16777215).
	VNI int
	// Local is the VXLAN source address; nil lets the node's routes
	// choose.
	Local net.IP
	// Dev is the node interface a VXLAN tunnel is bound to ("" = none).
	Dev string
}

// TunnelState is a tunnel as observed.
type TunnelState struct {
	Remote        netip.AddrPort
	PeerPublicKey string
	AllowedIPs    []net.IPNet
	VNI           int
	Local         net.IP
	// DevIndex is the node ifindex a VXLAN tunnel is bound to (0 = none).
	DevIndex int
	// PublicKey is the pod's own WireGuard public key ("" = the device
	// has no private key yet).
	PublicKey string
}

// Default MTUs of the tunnel kinds, the kernel's own: a WireGuard device
// over IPv6 (80 bytes of overhead), a VXLAN device over IPv4 (50 bytes).
const (
	defaultWireGuardMTU = 1420
	defaultVXLANMTU     = 1450
)

// validateTunnel checks the tunnel of a tunnel kind, and that other kinds
// have none.
func validateTunnel(ifc Interface, spec kindSpec) []error {
	t := ifc.Tunnel
	switch {
	case spec.tunnel == nil && t != nil:
		return []error{fmt.Errorf("tunnel: not used by kind %q", ifc.Kind)}
	case spec.tunnel == nil:
		return nil
	case t == nil:
		return []error{fmt.Errorf("tunnel: kind %q needs one", ifc.Kind)}
	}
	var errs []error
	if !t.Remote.IsValid() || t.Remote.Port() == 0 || !t.Remote.Addr().IsGlobalUnicast() {
		errs = append(errs, fmt.Errorf("tunnel remote %v: must be a unicast address and a port", t.Remote))
	}
	return append(errs, spec.tunnel.validate(ifc)...)
}

func validateWireGuard(ifc Interface) []error {
	var errs []error
	if ifc.MAC != nil {
		errs = append(errs, errors.New("mac: a wireguard device has none"))
	}
	if b, err := base64.StdEncoding.DecodeString(ifc.Tunnel.PeerPublicKey); err != nil || len(b) != 32 {
		errs = append(errs, errors.New("tunnel peer public key: must be the base64 of 32 bytes"))
	}
	if ifc.Tunnel.VNI != 0 || ifc.Tunnel.Dev != "" || ifc.Tunnel.Local != nil {
		errs = append(errs, errors.New("tunnel vni, dev and local: not used by a wireguard tunnel"))
	}
	return errs
}

func validateVXLANTunnel(ifc Interface) []error {
	var errs []error
	t := ifc.Tunnel
	if t.VNI < 1 || t.VNI > maxVNI {
		errs = append(errs, fmt.Errorf("tunnel vni %d: must be between 1 and %d", t.VNI, maxVNI))
	}
	if t.PeerPublicKey != "" || len(t.AllowedIPs) > 0 {
		errs = append(errs, errors.New("tunnel peer public key and allowed IPs: not used by a vxlan tunnel"))
	}
	if t.Dev != "" {
		if err := validateLinkName(t.Dev); err != nil {
			errs = append(errs, fmt.Errorf("tunnel dev: %w", err))
		}
	}
	if t.Local != nil && (t.Local.To4() == nil) != t.Remote.Addr().Is6() {
		errs = append(errs, fmt.Errorf("tunnel local %v: not of the remote's family", t.Local))
	}
	return errs
}

// tunnelKind is the tunnel half of a kind's entry in kinds.
type tunnelKind struct {
	// podLink names the device the pod gets, as Shape reports it.
	podLink  string
	validate func(Interface) []error
	// recreate says that the observed tunnel differs from the desired one
	// in what the kernel does not change in place.
	recreate func(want Tunnel, cur *TunnelState, s State) bool
	// configure says that the observed tunnel needs OpConfigureTunnel:
	// nil for kinds configured in full when created.
	configure func(want Tunnel, cur *TunnelState) bool
}

var wireGuardTunnel = &tunnelKind{
	podLink: "wireguard", validate: validateWireGuard,
	recreate: func(Tunnel, *TunnelState, State) bool { return false },
	// The peer changes in place and the pod keeps its key pair, so the
	// far end does not have to learn a new public key.
	configure: func(want Tunnel, cur *TunnelState) bool {
		return cur == nil || cur.PublicKey == "" || cur.Remote != want.Remote || cur.PeerPublicKey != want.PeerPublicKey ||
			!sameNets(cur.AllowedIPs, want.AllowedIPs)
	},
}

var vxlanTunnel = &tunnelKind{
	podLink: "vxlan", validate: validateVXLANTunnel,
	// The kernel fixes a VXLAN device's VNI, port and remote at creation.
	recreate: func(want Tunnel, cur *TunnelState, s State) bool {
		devIndex := 0
		if want.Dev != "" {
			devIndex = s.NodeLinks[want.Dev].Index
		}
		return cur == nil || cur.Remote != want.Remote || cur.VNI != want.VNI || cur.DevIndex != devIndex ||
			(want.Local != nil && !want.Local.Equal(cur.Local))
	},
}

// resolveTunnel checks the node interface a tunnel is bound to and gives
// it the kind's default MTU.
func resolveTunnel(defaultMTU int) func(ifc Interface, s State) (Interface, error) {
	return func(ifc Interface, s State) (Interface, error) {
		if t := ifc.Tunnel; t != nil && t.Dev != "" {
			if _, ok := s.NodeLinks[t.Dev]; !ok {
				return ifc, fmt.Errorf("tunnel underlay interface %q not found on the node", t.Dev)
			}
		}
		if ifc.MTU == 0 {
			ifc.MTU = defaultMTU
		}
		return ifc, nil
	}
}

// sameNets compares two lists of networks as sets.
func sameNets(a, b []net.IPNet) bool {
	key := func(l []net.IPNet) []string {
		out := make([]string, len(l))
		for i, n := range l {
			c := canonicalNet(n)
			out[i] = c.String()
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	return slices.Equal(key(a), key(b))
}

// tunnelDev is the node interface a desired tunnel names, "" for none.
func tunnelDev(ifc Interface) string {
	if ifc.Tunnel == nil {
		return ""
	}
	return ifc.Tunnel.Dev
}
