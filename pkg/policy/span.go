package policy

import (
	"fmt"
	"net/netip"
	"slices"
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
	if b.VLAN != nil && (b.VXLAN != nil || b.Uplink != nil) {
		return fmt.Errorf("combines bridge.vlan with spanning nodes, but the spanning port would carry only the bridge's default VLAN")
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
		ip, err := netip.ParseAddr(l.Address)
		if err != nil {
			return fmt.Errorf("has bridge.vxlan.local.address %q that is not an IP address", l.Address)
		}
		if err := CheckUnderlayAddress(ip, underlayCIDRs(x)); err != nil {
			return fmt.Errorf("has bridge.vxlan.local.address %q that cannot carry the overlay: %w", l.Address, err)
		}
	}
	if x.Underlay != nil {
		return checkUnderlayCIDRs(x.Underlay.CIDRs)
	}
	return nil
}

// underlayCIDRs are the networks a VXLAN span's nodes must be in (none:
// any usable address).
func underlayCIDRs(x *v1alpha1.VXLANSpan) []string {
	if x.Underlay == nil {
		return nil
	}
	return x.Underlay.CIDRs
}

// approveSpan writes the spanning setting into the approved interface,
// defaults filled in.
func approveSpan(b *v1alpha1.BridgeNetwork, a *v1alpha1.ApprovedInterface) {
	if b.Uplink != nil {
		a.Uplink = b.Uplink.Interface
	}
	if x := b.VXLAN; x != nil {
		a.VXLAN = &v1alpha1.ApprovedVXLAN{VNI: x.VNI, Port: x.Port, UnderlayCIDRs: slices.Clone(underlayCIDRs(x))}
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

// spanUse is one network's use of a bridge and how it spans nodes.
type spanUse struct {
	profile, network, bridge string
	// vni and uplink are the network's VNI (0: none) and uplink ("").
	vni    int32
	uplink string
	// spec is the bridge; how words its whole spanning setting (every
	// network of one bridge must say the same), filled in only for
	// bridges that several networks use.
	spec *v1alpha1.BridgeNetwork
	how  string
	// index is the network's index in its profile's spec.
	index int
}

// spanHow words a bridge network's spanning setting, defaults filled in.
func spanHow(b *v1alpha1.BridgeNetwork) string {
	c := b.DeepCopy()
	defaultSpan(c)
	switch {
	case c.VXLAN != nil:
		local := "the Node's InternalIP"
		if l := c.VXLAN.Local; l != nil {
			local = l.Interface + l.Address
		}
		within := ""
		if cidrs := underlayCIDRs(c.VXLAN); len(cidrs) > 0 {
			within = " within " + strings.Join(cidrs, " ")
		}
		return fmt.Sprintf("vxlan vni %d port %d from %s%s over underlay mtu %d", c.VXLAN.VNI, c.VXLAN.Port, local, within, c.VXLAN.UnderlayMTU)
	case c.Uplink != nil:
		return "uplink " + c.Uplink.Interface
	}
	return "node-local"
}

// spanUses lists every bridge network of the profiles with its spanning,
// or nothing when no network spans nodes (then nothing can clash). It runs
// on every admission: when nothing spans it allocates nothing, and
// otherwise it allocates the list once (appending a use at a time to a
// list of every bridge network of a thousand profiles was most of the
// webhook's allocations and its peak memory under load).
func spanUses(profiles []*v1alpha1.NetworkProfile) []spanUse {
	bridges, spanning := 0, false
	for _, p := range profiles {
		for i := range p.Spec.Networks {
			if b := p.Spec.Networks[i].Bridge; b != nil {
				bridges++
				spanning = spanning || (b.VXLAN != nil && b.VXLAN.VNI != 0) || (b.Uplink != nil && b.Uplink.Interface != "")
			}
		}
	}
	if !spanning {
		return nil
	}
	uses := make([]spanUse, 0, bridges)
	for _, p := range profiles {
		for i := range p.Spec.Networks {
			b := p.Spec.Networks[i].Bridge
			if b == nil {
				continue
			}
			u := spanUse{profile: p.Name, network: p.Spec.Networks[i].Name, bridge: b.Name, spec: b, index: i}
			if b.VXLAN != nil {
				u.vni = b.VXLAN.VNI
			}
			if b.Uplink != nil {
				u.uplink = b.Uplink.Interface
			}
			uses = append(uses, u)
		}
	}
	return uses
}

// spanClashes finds, across all profiles, the bridge networks whose
// spanning clashes with another's: a VNI used for two bridges (their
// segments would merge), a host interface made the uplink of two bridges
// (a link has one master), and one bridge spanning in two ways. It returns
// per profile and network name the errors naming the other uses.
func spanClashes(profiles []*v1alpha1.NetworkProfile) map[[2]string]field.ErrorList {
	uses := spanUses(profiles)
	out := map[[2]string]field.ErrorList{}
	clash := func(u spanUse, child []string, value any, what string, others []string) {
		if len(others) == 0 {
			return
		}
		sort.Strings(others)
		key := [2]string{u.profile, u.network}
		path := field.NewPath("spec", "networks").Index(u.index).Child("bridge", child...)
		out[key] = append(out[key], field.Invalid(path, value, fmt.Sprintf(
			"network %q: %s of bridge %q in profile %q is also used by %s; an admin must change one",
			u.network, what, u.bridge, u.profile, strings.Join(others, " and "))))
	}
	// Grouped by bridge, VNI and uplink, so that a webhook judging a pod
	// against a thousand profiles compares only networks that share one.
	byBridge, byVNI, byUplink := map[string][]int{}, map[int32][]int{}, map[string][]int{}
	for i, u := range uses {
		byBridge[u.bridge] = append(byBridge[u.bridge], i)
		if len(byBridge[u.bridge]) == 2 {
			first := &uses[byBridge[u.bridge][0]]
			first.how = spanHow(first.spec)
		}
		if len(byBridge[u.bridge]) > 1 {
			uses[i].how = spanHow(u.spec)
		}
		if u.vni != 0 {
			byVNI[u.vni] = append(byVNI[u.vni], i)
		}
		if u.uplink != "" {
			byUplink[u.uplink] = append(byUplink[u.uplink], i)
		}
	}
	others := func(group []int, differs func(o spanUse) bool, word func(o spanUse) string) []string {
		var out []string
		for _, j := range group {
			if o := uses[j]; differs(o) {
				out = append(out, word(o))
			}
		}
		return out
	}
	for _, u := range uses {
		otherBridge := func(o spanUse) bool { return o.bridge != u.bridge }
		bridgeOf := func(o spanUse) string {
			return fmt.Sprintf("bridge %q of network %q in profile %q", o.bridge, o.network, o.profile)
		}
		if u.vni != 0 {
			clash(u, []string{"vxlan", "vni"}, u.vni, fmt.Sprintf("vxlan vni %d (a VNI carries one bridge)", u.vni),
				others(byVNI[u.vni], otherBridge, bridgeOf))
		}
		if u.uplink != "" {
			clash(u, []string{"uplink", "interface"}, u.uplink, "uplink "+u.uplink+" (an interface is the port of one bridge)",
				others(byUplink[u.uplink], otherBridge, bridgeOf))
		}
		clash(u, nil, u.how, "spanning setting "+u.how, others(byBridge[u.bridge],
			func(o spanUse) bool { return o.how != u.how },
			func(o spanUse) string {
				return fmt.Sprintf("network %q in profile %q (%s)", o.network, o.profile, o.how)
			}))
	}
	return out
}

// DescribeSpanning words how each network of a profile that spans nodes
// does so, in spec order: "overlay=vxlan/1001 fabric=uplink/eth2"; "" when
// every network is node-local. The controller writes it into the
// profile's status, where a printer column shows it.
func DescribeSpanning(p *v1alpha1.NetworkProfile) string {
	var parts []string
	for _, n := range p.Spec.Networks {
		switch {
		case n.Bridge == nil:
		case n.Bridge.VXLAN != nil:
			parts = append(parts, fmt.Sprintf("%s=vxlan/%d", n.Name, n.Bridge.VXLAN.VNI))
		case n.Bridge.Uplink != nil:
			parts = append(parts, fmt.Sprintf("%s=uplink/%s", n.Name, n.Bridge.Uplink.Interface))
		}
	}
	return strings.Join(parts, " ")
}
