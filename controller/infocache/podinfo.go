package infocache

import (
	"slices"
	"strings"
	"unique"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/attachment"
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

// Attachment is one approved interface and its network (read by
// package attachment, its strings interned).
type Attachment = attachment.Attachment

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

// readApproval reads the interfaces of an approval (attachment.Read),
// their names interned.
func readApproval(text, status string) (ApprovalState, []Attachment) {
	out, ok := attachment.Read(text, status)
	if !ok {
		return UnreadableApproval, nil
	}
	for i := range out {
		a := &out[i]
		a.Interface, a.Network, a.Profile, a.Space = intern(a.Interface), intern(a.Network), intern(a.Profile), intern(a.Space)
	}
	return Approved, out
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

// On is the pod's place on one network (attachment.On).
func (p *PodInfo) On(network string) (Attachment, bool) { return attachment.On(p.Interfaces, network) }

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
