package infocache

import (
	"encoding/json"
	"net"
	"net/netip"
	"slices"
	"strings"
	"unique"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/ipam/rules"
)

// PodInfo is all the controller keeps of a pod: what tells whether a claim
// naming the pod is held by it (its identity, node and the interface/network
// pairs of its approval), and what network policy reads of a pod on a
// podnet network (its labels, profiles and addresses there). The pod cache
// holds one per pod of the cluster, and a pod read live is reduced to one
// too, so that both are judged by the same code (forgery). The strings
// every pod shares (namespace, node, interface, network and profile names,
// label sets) are interned.
type PodInfo struct {
	Namespace string
	Name      string
	UID       types.UID
	// Node is spec.nodeName ("" while unscheduled).
	Node string
	// Approval says whether the pod carries an approval and whether this
	// version could read it.
	Approval ApprovalState
	// Interfaces are the approved interface/network pairs (Approval
	// Approved only).
	Interfaces []Attachment
	// Labels are the pod's labels as labels.Set's String writes them
	// ("k1=v1,k2=v2", sorted; LabelSet reads them back), interned so that
	// the pods of one workload share one string, and kept only for a pod
	// with an approved interface: of most pods they are the largest field,
	// and only network policy reads them.
	Labels string
}

// ApprovalState is what a pod's approval annotation says to the
// controller.
type ApprovalState uint8

const (
	// NoApproval: the pod has no podnet approval.
	NoApproval ApprovalState = iota
	// Approved: the approval was read; Interfaces are its pairs.
	Approved
	// UnreadableApproval: an approval this version cannot read (a newer
	// webhook's); it covers every claim, so that an upgrade never costs a
	// pod its addresses.
	UnreadableApproval
)

// Attachment is one approved interface and its network.
type Attachment struct {
	Interface string
	Network   string
	// MAC is the interface's MAC as the agent reported it in the pod's
	// network-status (written only by the agent: the webhook refuses
	// anyone else's change), for the kinds whose interfaces each hold a
	// MAC of their own on the network's segment (ownMAC); zero otherwise,
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

// NewPodInfo reduces p to what the controller keeps.
func NewPodInfo(p *corev1.Pod) *PodInfo {
	text, ok := p.Annotations[v1alpha1.ApprovedAnnotation]
	info := podInfoOf(p.Namespace, p.Name, p.UID, p.Spec.NodeName, text, ok, p.Annotations[v1alpha1.NetworkStatusAnnotation])
	if info.OnNetworks() {
		info.Labels = labelText(p.Labels)
	}
	return info
}

// OnNetworks says whether the pod holds an approved interface: only such a
// pod keeps its labels.
func (p *PodInfo) OnNetworks() bool { return len(p.Interfaces) > 0 }

// labelText is labels as PodInfo keeps them, interned.
func labelText(labels map[string]string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(labels[k])
	}
	return intern(b.String())
}

// LabelSet reads Labels back as a map. Label keys and values hold no ','
// or '=' (the API server refuses them), so the text splits cleanly.
func (p *PodInfo) LabelSet() map[string]string {
	if p.Labels == "" {
		return nil
	}
	out := make(map[string]string, strings.Count(p.Labels, ",")+1)
	for kv := range strings.SplitSeq(p.Labels, ",") {
		k, v, _ := strings.Cut(kv, "=")
		out[k] = v
	}
	return out
}

// podInfoOf is newPodInfo from the fields themselves, for decoders that
// never build a Pod.
func podInfoOf(namespace, name string, uid types.UID, node, approval string, approved bool, status string) *PodInfo {
	info := &PodInfo{Namespace: intern(namespace), Name: name, UID: uid, Node: intern(node)}
	if approved {
		info.Approval, info.Interfaces = readApproval(approval, status)
	}
	return info
}

// readApproval reads the interface/network pairs of an approval, with
// the MACs and addresses the network-status reports for them.
func readApproval(text, status string) (ApprovalState, []Attachment) {
	var a approvedInterfaces
	if err := json.Unmarshal([]byte(text), &a); err != nil {
		return UnreadableApproval, nil
	}
	reported := statusOf(status)
	out := make([]Attachment, len(a.Interfaces))
	for i, in := range a.Interfaces {
		out[i] = Attachment{Interface: intern(in.Interface), Network: intern(in.Network), Profile: intern(in.Profile),
			Space: intern(rules.SpaceName(v1alpha1.ApprovedInterface{Kind: in.Kind, Network: in.Network, Bridge: in.Bridge, Master: in.Master}))}
		r := reported[in.Interface]
		if ownMAC(in.Kind) {
			out[i].MAC = r.mac
		}
		out[i].Addresses = r.addresses
	}
	return Approved, out
}

// ownMAC says whether each interface of a kind holds a MAC of its own on
// its segment, so that two of one MAC on a network are a collision: not
// ipvlan (its interfaces share their parent's), vlan (a VLAN link takes
// its master's) or tunnels (no neighbours).
func ownMAC(kind v1alpha1.NetworkKind) bool {
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

// approvedInterfaces is the part of an approval the controller reads:
// which interface is on which network, of which kind, on which segment.
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

// intern returns the one copy of s that every pod shares: namespaces,
// nodes, interface, network and profile names and label sets repeat
// across thousands of pods.
func intern(s string) string {
	if s == "" {
		return ""
	}
	return unique.Make(s).Value()
}

// On is the pod's place on one network: its first interface there, the
// profile that granted it and its address space, and the addresses of all
// its interfaces there; ok is false when the pod is not on the network.
func (p *PodInfo) On(network string) (on Attachment, ok bool) {
	for _, a := range p.Interfaces {
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

// GetObjectMeta makes a PodInfo an object to client-go's key functions
// (namespace/name) and reflector; it is built on demand, never stored.
func (p *PodInfo) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, UID: p.UID}
}

// GetObjectKind implements runtime.Object.
func (p *PodInfo) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object. Interfaces (and their
// addresses) are never changed once made, so the copy shares them.
func (p *PodInfo) DeepCopyObject() runtime.Object {
	c := *p
	return &c
}

// toPodInfo is the pod informer's transform: a pod arriving by watch (or
// by a streamed initial list) is reduced as it arrives; what is already a
// PodInfo (from the paged list) or a tombstone passes unchanged.
func toPodInfo(obj any) (any, error) {
	if p, ok := obj.(*corev1.Pod); ok {
		return NewPodInfo(p), nil
	}
	return obj, nil
}
