package policy

import (
	"fmt"
	"net/netip"
	"strings"
)

// maxUnderlayCIDRs is the CRD's limit on underlay.cidrs.
const maxUnderlayCIDRs = 16

// CheckUnderlayAddress decides whether a node address may carry an overlay
// whose admin declared cidrs (the profile's underlay.cidrs; none: any
// usable address): a loopback, unspecified, multicast or link-local
// address never may, since flooding a tenant's traffic there would hand
// it to the node itself or to whoever shares its link; otherwise it must
// lie in one of cidrs. The agent calls it for its own source address and
// for every peer; the profile's own checks call it for the CIDRs.
func CheckUnderlayAddress(ip netip.Addr, cidrs []string) error {
	ip = ip.Unmap()
	switch {
	case !ip.IsValid():
		return fmt.Errorf("underlay address %v: not an IP address", ip)
	case ip.IsLoopback(), ip.IsUnspecified(), ip.IsMulticast(), ip.IsLinkLocalUnicast(), ip == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return fmt.Errorf("underlay address %s: loopback, unspecified, multicast, broadcast and link-local addresses never carry an overlay", ip)
	}
	if len(cidrs) == 0 {
		return nil
	}
	for _, c := range cidrs {
		if p, err := netip.ParsePrefix(c); err == nil && p.Contains(ip) {
			return nil
		}
	}
	return fmt.Errorf("underlay address %s: outside underlay.cidrs [%s]", ip, strings.Join(cidrs, " "))
}

// checkUnderlayCIDRs refuses what the CRD refuses in underlay.cidrs.
func checkUnderlayCIDRs(cidrs []string) error {
	if len(cidrs) == 0 || len(cidrs) > maxUnderlayCIDRs {
		return fmt.Errorf("has %d bridge.vxlan.underlay.cidrs, want 1-%d", len(cidrs), maxUnderlayCIDRs)
	}
	for _, c := range cidrs {
		p, err := netip.ParsePrefix(c)
		if err != nil {
			return fmt.Errorf("has bridge.vxlan.underlay.cidrs entry %q that is not a CIDR, e.g. 10.0.0.0/16", c)
		}
		if err := CheckUnderlayAddress(p.Addr(), nil); err != nil {
			return fmt.Errorf("has bridge.vxlan.underlay.cidrs entry %q of addresses that cannot carry an overlay: %w", c, err)
		}
	}
	return nil
}
