package carry

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/hostdev"
	"podnet.io/podnet/pkg/policy"
)

// LabelPrefix is the domain of the node labels that say what a node can
// carry: <LabelPrefix>/<need>. Only the agent of a node writes them on its
// own Node (deploy/policies/agent-node-carry.yaml).
const LabelPrefix = "carry.podnet.io"

// LabelValue is the value of every carry label; a need a node does not
// satisfy has no label at all.
const LabelValue = "true"

// What is a kind of need.
type What string

// The kinds of need.
const (
	// NeedLink: a link of the node's own network namespace, by name.
	NeedLink What = "link"
	// NeedAddress: an address assigned to one of the node's links.
	NeedAddress What = "address"
	// NeedUnderlay: the Node's InternalIP of a family that may carry a
	// VXLAN overlay (policy.CheckUnderlayAddress with the CIDRs).
	NeedUnderlay What = "underlay"
	// NeedModule: a kernel module the kernel has (loaded, built in or
	// loadable: the kernel loads a link kind's module on its first use).
	NeedModule What = "module"
	// NeedHostDevice: a free NIC of the node that a hostDevice network's
	// selector matches (Need.Devices). Pods use it up: see Consumed.
	NeedHostDevice What = "hostdev"
)

// Need is one thing a network needs of a node.
type Need struct {
	What What
	// Name is the link name, the address, the module, or for
	// NeedUnderlay the family ("IPv4" or "IPv6").
	Name string
	// CIDRs are a NeedUnderlay's underlay.cidrs, sorted; empty: any
	// usable address.
	CIDRs []string
	// Devices is a NeedHostDevice's selector (Name says it in words).
	Devices hostdev.Selector
}

// Consumed says whether pods use the need up: a node has it until its
// pods take it. Placement asks for it, so that a pod waits for a node
// with one free; but a pod already on the node is never refused for
// lacking it (Lacks), since what it lacks may be what it holds.
func (n Need) Consumed() bool { return n.What == NeedHostDevice }

// Key is the need's node label key, <LabelPrefix>/<tag>.<name> with the
// name as it is when it makes a valid label name, else <tag>-h.<hash>:
// the tags contain no dot, so a literal name never reads as a hash.
func (n Need) Key() string {
	switch n.What {
	case NeedLink:
		return key("nic", n.Name)
	case NeedAddress:
		return key("addr", n.Name)
	case NeedUnderlay:
		if len(n.CIDRs) == 0 {
			return key("underlay", strings.ToLower(n.Name))
		}
		return hashed("underlay", n.Name+"|"+strings.Join(n.CIDRs, ","))
	case NeedHostDevice:
		return hashed("hostdev", n.Name)
	default:
		return key("mod", n.Name)
	}
}

// String says the need in words, for conditions and Events.
func (n Need) String() string {
	switch n.What {
	case NeedLink:
		return fmt.Sprintf("host link %q", n.Name)
	case NeedAddress:
		return fmt.Sprintf("host address %s", n.Name)
	case NeedUnderlay:
		if len(n.CIDRs) == 0 {
			return fmt.Sprintf("an %s InternalIP usable as vxlan underlay", n.Name)
		}
		return fmt.Sprintf("an %s InternalIP inside underlay.cidrs [%s]", n.Name, strings.Join(n.CIDRs, " "))
	case NeedHostDevice:
		return "a free node NIC matching " + n.Name
	default:
		return fmt.Sprintf("kernel module %s", n.Name)
	}
}

func key(tag, name string) string {
	if !isLabelName(tag + "." + name) {
		return hashed(tag, name)
	}
	return LabelPrefix + "/" + tag + "." + name
}

// isLabelName is the name part of a qualified label key (at most 63
// characters, alphanumeric at both ends, '-', '_' and '.' inside), as
// validation.IsQualifiedName judges it, without its regular expression:
// the webhook makes keys on every pod CREATE.
func isLabelName(s string) bool {
	if len(s) == 0 || len(s) > validation.LabelValueMaxLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		inner := c == '-' || c == '_' || c == '.'
		if !alnum && (!inner || i == 0 || i == len(s)-1) {
			return false
		}
	}
	return true
}

func hashed(tag, name string) string {
	sum := sha256.Sum256([]byte(name))
	return LabelPrefix + "/" + tag + "-h." + hex.EncodeToString(sum[:10])
}

// Needs returns what a profile network needs of a node, sorted by key,
// each once. The bridge and veth modules are not needs: every node's
// kernel has them (Kubernetes' own pod networking is built of them), so
// a node-local bridge network needs nothing of a node and its pods are
// placed as they ask.
func Needs(n *v1alpha1.Network) []Need {
	var out []Need
	link := func(name string) { out = append(out, Need{What: NeedLink, Name: name}) }
	mods := func(names ...string) {
		for _, m := range names {
			out = append(out, Need{What: NeedModule, Name: m})
		}
	}
	switch {
	case n.Bridge != nil:
		if n.Bridge.Uplink != nil {
			link(n.Bridge.Uplink.Interface)
		}
		if vx := n.Bridge.VXLAN; vx != nil {
			mods("vxlan")
			out = append(out, localNeeds(vx.Local, vx.Underlay)...)
		}
	case n.Macvlan != nil:
		mods("macvlan")
		link(n.Macvlan.Master)
	case n.IPVlan != nil:
		mods("ipvlan")
		link(n.IPVlan.Master)
	case n.VLAN != nil:
		mods("8021q")
		link(n.VLAN.Master)
	case n.Tunnel != nil:
		out = append(out, tunnelNeeds(n.Tunnel)...)
	case n.HostDevice != nil:
		sel := policy.HostDeviceSelector(n.HostDevice)
		out = append(out, Need{What: NeedHostDevice, Name: sel.String(), Devices: sel})
	}
	return sorted(out)
}

// localNeeds is what a bridge's VXLAN overlay needs to find its source the
// way the agent does (agent/span.go): the local interface, the local
// address, or else the Node's InternalIP of the underlay's family (IPv4:
// the family is IPv6 only when local.address is), inside the CIDRs.
func localNeeds(local *v1alpha1.VXLANLocal, under *v1alpha1.VXLANUnderlay) []Need {
	switch {
	case local != nil && local.Interface != "":
		return []Need{{What: NeedLink, Name: local.Interface}}
	case local != nil && local.Address != "":
		return []Need{addressNeed(local.Address)}
	}
	n := Need{What: NeedUnderlay, Name: "IPv4"}
	if under != nil {
		n.CIDRs = slices.Sorted(slices.Values(under.CIDRs))
	}
	return []Need{n}
}

// tunnelNeeds: the tunnel's module and its underlay interface or address;
// without one the node's routes choose the source, which needs nothing.
func tunnelNeeds(t *v1alpha1.TunnelNetwork) []Need {
	var out []Need
	if t.WireGuard != nil {
		out = append(out, Need{What: NeedModule, Name: "wireguard"})
	} else {
		out = append(out, Need{What: NeedModule, Name: "vxlan"})
	}
	if u := t.Underlay; u != nil {
		if u.Interface != "" {
			out = append(out, Need{What: NeedLink, Name: u.Interface})
		} else if u.Address != "" {
			out = append(out, addressNeed(u.Address))
		}
	}
	return out
}

// addressNeed names an address in its canonical form, so that two
// spellings of one address are one label.
func addressNeed(s string) Need {
	if a, err := netip.ParseAddr(s); err == nil {
		s = a.Unmap().String()
	}
	return Need{What: NeedAddress, Name: s}
}

// sorted orders needs by key and drops repeats, making each key once.
func sorted(needs []Need) []Need {
	type keyed struct {
		key  string
		need Need
	}
	ks := make([]keyed, len(needs))
	for i, n := range needs {
		ks[i] = keyed{n.Key(), n}
	}
	slices.SortFunc(ks, func(a, b keyed) int { return strings.Compare(a.key, b.key) })
	ks = slices.CompactFunc(ks, func(a, b keyed) bool { return a.key == b.key })
	out := needs[:0]
	for _, k := range ks {
		out = append(out, k.need)
	}
	return out
}

// NeedsOfProfiles is every need of every network of the profiles, sorted
// by key, each once: what an agent probes and labels its node with.
func NeedsOfProfiles(profiles []v1alpha1.NetworkProfile) []Need {
	var out []Need
	for i := range profiles {
		for j := range profiles[i].Spec.Networks {
			out = append(out, Needs(&profiles[i].Spec.Networks[j])...)
		}
	}
	return sorted(out)
}
