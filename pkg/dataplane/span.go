package dataplane

import (
	"fmt"
	"net"
)

// Limits and defaults of a network that spans nodes.
const (
	maxVNI           = 1<<24 - 1
	defaultVXLANPort = 4789
	maxPort          = 65535
)

// spans reports whether a bridge interface's network spans nodes.
func spans(ifc Interface) bool {
	return ifc.VXLAN != nil || ifc.Uplink != ""
}

// validateSpan checks the VXLAN or uplink of an interface, which only the
// kinds marked spans may have.
func validateSpan(ifc Interface) []error {
	if !spans(ifc) {
		return nil
	}
	if !kinds[ifc.Kind].spans {
		return []error{fmt.Errorf("vxlan and uplink: not used by kind %q", ifc.Kind)}
	}
	if ifc.VXLAN != nil && ifc.Uplink != "" {
		return []error{fmt.Errorf("vxlan and uplink %q: at most one may be set", ifc.Uplink)}
	}
	if ifc.VLAN != 0 {
		// The spanning port would carry only the bridge's default VLAN.
		return []error{fmt.Errorf("vlan %d: a port VLAN cannot be combined with vxlan or uplink", ifc.VLAN)}
	}
	if ifc.Uplink != "" {
		if err := validateLinkName(ifc.Uplink); err != nil {
			return []error{fmt.Errorf("uplink: %w", err)}
		}
		return nil
	}
	var errs []error
	add := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf(format, args...))
	}
	vx := ifc.VXLAN
	if vx.VNI < 1 || vx.VNI > maxVNI {
		add("vxlan vni %d: must be between 1 and %d", vx.VNI, maxVNI)
	}
	if vx.Port < 0 || vx.Port > maxPort {
		add("vxlan port %d: must be 0 (%d) or between 1 and %d", vx.Port, defaultVXLANPort, maxPort)
	}
	if vx.Dev != "" {
		if err := validateLinkName(vx.Dev); err != nil {
			add("vxlan dev: %w", err)
		}
	}
	// Without a local address the kernel opens an IPv4 socket only.
	family := net.IPv4len
	if vx.Local != nil {
		if canonicalIP(vx.Local) == nil {
			add("vxlan local %v: not an IP address", vx.Local)
		}
		family = len(canonicalIP(vx.Local))
	}
	if err := validatePeers(vx.Peers, family); err != nil {
		add("vxlan %w", err)
	}
	return errs
}

// validatePeers checks peer addresses: valid, unicast, listed once, all of
// one family (that of the local address, when family is not 0).
func validatePeers(peers []net.IP, family int) error {
	seen := map[string]bool{}
	for _, p := range peers {
		ip := canonicalIP(p)
		switch {
		case ip == nil:
			return fmt.Errorf("peer %v: not an IP address", p)
		case ip.IsUnspecified() || ip.IsMulticast():
			return fmt.Errorf("peer %s: must be a unicast address", ip)
		case seen[ip.String()]:
			return fmt.Errorf("peer %s: listed twice", ip)
		case family != 0 && len(ip) != family:
			return fmt.Errorf("peer %s: not of the underlay's address family (IPv%d; an IPv6 underlay needs an IPv6 local address)", ip, map[int]int{net.IPv4len: 4, net.IPv6len: 6}[family])
		}
		seen[ip.String()] = true
		family = len(ip)
	}
	return nil
}

// vxlanPort is the UDP port of an overlay, defaulted.
func vxlanPort(vx *VXLAN) int {
	if vx.Port == 0 {
		return defaultVXLANPort
	}
	return vx.Port
}
