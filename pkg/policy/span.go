package policy

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"podnet.io/podnet/api/v1alpha1"
)

// The defaults and limits of a bridge network that spans nodes (the CRD
// defaults and checks them too; these cover objects that never went
// through the API server).
const (
	// DefaultVXLANPort is the IANA VXLAN port.
	DefaultVXLANPort = 4789
	// DefaultUnderlayMTU is the node network's MTU when a profile names
	// none.
	DefaultUnderlayMTU = 1500
	// VXLANOverheadIPv4 and VXLANOverheadIPv6 are the bytes VXLAN adds to
	// an inner frame: outer IP header (20 or 40), UDP (8), VXLAN (8) and
	// the inner Ethernet header (14).
	VXLANOverheadIPv4 = 50
	VXLANOverheadIPv6 = 70
	maxVNI            = 1<<24 - 1
	minUnderlayMTU    = 1280
)

// checkSpan refuses a spanning setting the CRD would have refused.
func checkSpan(b *v1alpha1.BridgeNetwork) error {
	if b.VXLAN != nil && b.Uplink != nil {
		return fmt.Errorf("sets both bridge.vxlan and bridge.uplink instead of at most one")
	}
	if u := b.Uplink; u != nil {
		return checkLinkName("bridge.uplink.interface", u.Interface)
	}
	x := b.VXLAN
	if x == nil {
		return nil
	}
	switch {
	case x.VNI < 1 || x.VNI > maxVNI:
		return fmt.Errorf("has bridge.vxlan.vni %d outside 1-%d", x.VNI, maxVNI)
	case x.Port < 0 || x.Port > 65535:
		return fmt.Errorf("has bridge.vxlan.port %d outside 1-65535", x.Port)
	case x.UnderlayMTU != 0 && (x.UnderlayMTU < minUnderlayMTU || x.UnderlayMTU > maxMTU):
		return fmt.Errorf("has bridge.vxlan.underlayMTU %d outside %d-%d", x.UnderlayMTU, minUnderlayMTU, maxMTU)
	}
	if l := x.Local; l != nil {
		if (l.Interface == "") == (l.Address == "") {
			return fmt.Errorf("sets %s of bridge.vxlan.local.interface and .address instead of exactly one", map[bool]string{true: "both", false: "neither"}[l.Interface != ""])
		}
		if l.Interface != "" {
			return checkLinkName("bridge.vxlan.local.interface", l.Interface)
		}
		if _, err := netip.ParseAddr(l.Address); err != nil {
			return fmt.Errorf("has bridge.vxlan.local.address %q that is not an IP address", l.Address)
		}
	}
	return nil
}

// approveSpan writes the spanning setting into the approved interface,
// defaults filled in.
func approveSpan(b *v1alpha1.BridgeNetwork, a *v1alpha1.ApprovedInterface) {
	if b.Uplink != nil {
		a.Uplink = b.Uplink.Interface
	}
	if x := b.VXLAN; x != nil {
		a.VXLAN = &v1alpha1.ApprovedVXLAN{VNI: x.VNI, Port: x.Port}
		if a.VXLAN.Port == 0 {
			a.VXLAN.Port = DefaultVXLANPort
		}
		if x.Local != nil {
			a.VXLAN.LocalInterface, a.VXLAN.LocalAddress = x.Local.Interface, x.Local.Address
		}
	}
}

// defaultSpan spells out the spanning defaults in a copy of the network.
func defaultSpan(b *v1alpha1.BridgeNetwork) {
	if x := b.VXLAN; x != nil {
		if x.Port == 0 {
			x.Port = DefaultVXLANPort
		}
		if x.UnderlayMTU == 0 {
			x.UnderlayMTU = DefaultUnderlayMTU
		}
	}
}

// describeSpan words the spanning setting for denial messages.
func describeSpan(b *v1alpha1.BridgeNetwork) []string {
	switch {
	case b.VXLAN != nil:
		limit, _ := overlayMTU(b.VXLAN)
		return []string{fmt.Sprintf("vxlan vni %d (mtu at most %d)", b.VXLAN.VNI, limit)}
	case b.Uplink != nil:
		return []string{"uplink " + b.Uplink.Interface}
	}
	return nil
}

// overlayMTU is the largest pod MTU an overlay carries without
// fragmenting, and why.
func overlayMTU(x *v1alpha1.VXLANSpan) (int32, string) {
	underlay := x.UnderlayMTU
	if underlay == 0 {
		underlay = DefaultUnderlayMTU
	}
	family, overhead := "IPv4", int32(VXLANOverheadIPv4)
	if x.Local != nil && x.Local.Address != "" {
		if ip, err := netip.ParseAddr(x.Local.Address); err == nil && ip.Is6() && !ip.Is4In6() {
			family, overhead = "IPv6", VXLANOverheadIPv6
		}
	}
	return underlay - overhead, fmt.Sprintf("the vxlan overlay's limit: underlayMTU %d minus %d bytes of VXLAN over %s", underlay, overhead, family)
}

// capMTU applies a kind's MTU limit: an unset MTU becomes the limit, a
// larger one is refused with the reason.
func (l limit) capMTU(p *field.Path, mtu, limit int32, why string, fromProfile bool) (int32, field.ErrorList) {
	switch {
	case mtu == 0:
		return limit, nil
	case mtu <= limit:
		return mtu, nil
	case fromProfile:
		return 0, field.ErrorList{field.Invalid(p, mtu, l.admin(fmt.Sprintf("has default mtu %d above %d, %s", mtu, limit, why)))}
	}
	return 0, field.ErrorList{field.Invalid(p, mtu, l.msg("above %d, %s", limit, why))}
}

// vniUse is one network's use of a VNI.
type vniUse struct {
	profile, network, bridge string
	path                     *field.Path
}

// vniClashes finds VNIs used for more than one bridge across all profiles,
// and returns per profile and network name the message naming the other
// use. A VNI carries one layer-2 segment: two bridges on it would merge.
func vniClashes(profiles []*v1alpha1.NetworkProfile) map[[2]string]*field.Error {
	byVNI := map[int32][]vniUse{}
	for _, p := range profiles {
		for i := range p.Spec.Networks {
			n := &p.Spec.Networks[i]
			if n.Bridge == nil || n.Bridge.VXLAN == nil {
				continue
			}
			path := field.NewPath("spec", "networks").Index(i).Child("bridge", "vxlan", "vni")
			byVNI[n.Bridge.VXLAN.VNI] = append(byVNI[n.Bridge.VXLAN.VNI], vniUse{p.Name, n.Name, n.Bridge.Name, path})
		}
	}
	out := map[[2]string]*field.Error{}
	for vni, uses := range byVNI {
		for _, u := range uses {
			var others []string
			for _, o := range uses {
				if o.bridge != u.bridge {
					others = append(others, fmt.Sprintf("bridge %q of network %q in profile %q", o.bridge, o.network, o.profile))
				}
			}
			if len(others) == 0 {
				continue
			}
			sort.Strings(others)
			out[[2]string{u.profile, u.network}] = field.Invalid(u.path, vni, fmt.Sprintf(
				"network %q: vxlan vni %d of bridge %q in profile %q is also used for %s; a VNI carries one bridge, so an admin must change one",
				u.network, vni, u.bridge, u.profile, strings.Join(others, " and ")))
		}
	}
	return out
}
