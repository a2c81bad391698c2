package attachment

import (
	"encoding/json"
	"net"
	"net/netip"
	"slices"
	"strings"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/ipam/rules"
)

// Attachment is one approved interface and its network.
type Attachment struct {
	Interface string
	Network   string
	// MAC is the interface's MAC as the agent reported it in the pod's
	// network-status (written only by the agent: the webhook refuses
	// anyone else's change), for the kinds whose interfaces each hold a
	// MAC of their own on the network's segment (OwnMAC); zero otherwise,
	// and until the agent reported it.
	MAC [6]byte
	// Profile is the NetworkProfile that granted the interface.
	Profile string
	// Space is the address space of the interface (rules.SpaceName): the
	// segment on which its addresses are its own.
	Space string
	// Addresses are the interface's addresses on its network as the agent
	// reported them in the pod's network-status ("ips"); none until it did.
	Addresses []netip.Addr
}

// Read reads the interfaces of an approval (podnet.io/approved), with
// the MACs and addresses the network-status reports for them; ok is false
// when the approval cannot be read.
func Read(approval, status string) (out []Attachment, ok bool) {
	var a approvedInterfaces
	if err := json.Unmarshal([]byte(approval), &a); err != nil {
		return nil, false
	}
	reported := statusOf(status)
	out = make([]Attachment, len(a.Interfaces))
	for i, in := range a.Interfaces {
		out[i] = Attachment{Interface: in.Interface, Network: in.Network, Profile: in.Profile,
			Space: rules.SpaceName(v1alpha1.ApprovedInterface{Kind: in.Kind, Network: in.Network, Bridge: in.Bridge, Master: in.Master})}
		r := reported[in.Interface]
		if OwnMAC(in.Kind) {
			out[i].MAC = r.mac
		}
		out[i].Addresses = r.addresses
	}
	return out, true
}

// On is a pod's place on one network, from its attachments: its first
// interface there, the profile that granted it and its address space,
// with the addresses of all its interfaces there; ok is false when the
// pod is not on the network.
func On(attachments []Attachment, network string) (on Attachment, ok bool) {
	for _, a := range attachments {
		if a.Network != network {
			continue
		}
		if !ok {
			on, ok = a, true
			on.Addresses = nil
		}
		on.Addresses = append(on.Addresses, a.Addresses...)
	}
	slices.SortFunc(on.Addresses, netip.Addr.Compare)
	on.Addresses = slices.Compact(on.Addresses)
	return on, ok
}

// OwnMAC says whether each interface of a kind holds a MAC of its own on
// its segment, so that two of one MAC on a network are a collision: not
// ipvlan (its interfaces share their parent's), vlan (a VLAN link takes
// its master's) or tunnels (no neighbours).
func OwnMAC(kind v1alpha1.NetworkKind) bool {
	switch kind {
	case v1alpha1.KindBridge, v1alpha1.KindMacvlan, v1alpha1.KindHostDevice:
		return true
	}
	return false
}

// reported is what a network-status says of one interface.
type reported struct {
	mac       [6]byte
	addresses []netip.Addr
}

// statusOf reads the MAC and addresses of each interface of a
// network-status; an unreadable status, MAC or address reads as none.
// Addresses are written without a prefix length, as Multus writes them;
// one with a length is read as its address.
func statusOf(status string) map[string]reported {
	if status == "" {
		return nil
	}
	var entries []struct {
		Interface string   `json:"interface"`
		MAC       string   `json:"mac"`
		IPs       []string `json:"ips"`
	}
	if json.Unmarshal([]byte(status), &entries) != nil {
		return nil
	}
	out := make(map[string]reported, len(entries))
	for _, e := range entries {
		var r reported
		if hw, err := net.ParseMAC(e.MAC); err == nil && len(hw) == 6 {
			r.mac = [6]byte(hw)
		}
		for _, ip := range e.IPs {
			addr, _, _ := strings.Cut(ip, "/")
			if a, err := netip.ParseAddr(addr); err == nil {
				r.addresses = append(r.addresses, a.Unmap())
			}
		}
		out[e.Interface] = r
	}
	return out
}

// approvedInterfaces is the part of an approval read here: which
// interface is on which network, of which kind, on which segment.
type approvedInterfaces struct {
	Interfaces []approvedInterface `json:"interfaces"`
}

type approvedInterface struct {
	Interface string               `json:"interface"`
	Network   string               `json:"network"`
	Profile   string               `json:"profile"`
	Kind      v1alpha1.NetworkKind `json:"kind"`
	Bridge    string               `json:"bridge"`
	Master    string               `json:"master"`
}
