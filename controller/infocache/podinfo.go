package infocache

import (
	"encoding/json"
	"unique"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"podnet.io/podnet/api/v1alpha1"
)

// PodInfo is all the controller keeps of a pod: what tells whether a claim
// naming the pod is held by it (its identity, node and the interface/network
// pairs of its approval). The pod cache holds one per pod of the cluster,
// and a pod read live is reduced to one too, so that both are judged by the
// same code (forgery). The strings every pod shares (namespace, node,
// interface and network names) are interned.
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
}

// NewPodInfo reduces p to what the controller keeps.
func NewPodInfo(p *corev1.Pod) *PodInfo {
	text, ok := p.Annotations[v1alpha1.ApprovedAnnotation]
	return podInfoOf(p.Namespace, p.Name, p.UID, p.Spec.NodeName, text, ok)
}

// podInfoOf is newPodInfo from the fields themselves, for decoders that
// never build a Pod.
func podInfoOf(namespace, name string, uid types.UID, node, approval string, approved bool) *PodInfo {
	info := &PodInfo{Namespace: intern(namespace), Name: name, UID: uid, Node: intern(node)}
	if approved {
		info.Approval, info.Interfaces = readApproval(approval)
	}
	return info
}

// readApproval reads the interface/network pairs of an approval.
func readApproval(text string) (ApprovalState, []Attachment) {
	var a approvedInterfaces
	if err := json.Unmarshal([]byte(text), &a); err != nil {
		return UnreadableApproval, nil
	}
	out := make([]Attachment, len(a.Interfaces))
	for i, in := range a.Interfaces {
		out[i] = Attachment{Interface: intern(in.Interface), Network: intern(in.Network)}
	}
	return Approved, out
}

// approvedInterfaces is the part of an approval the controller reads:
// which interface is on which network.
type approvedInterfaces struct {
	Interfaces []approvedInterface `json:"interfaces"`
}

type approvedInterface struct {
	Interface string `json:"interface"`
	Network   string `json:"network"`
}

// intern returns the one copy of s that every pod shares: namespaces,
// nodes, interface and network names repeat across thousands of pods.
func intern(s string) string {
	if s == "" {
		return ""
	}
	return unique.Make(s).Value()
}

// GetObjectMeta makes a PodInfo an object to client-go's key functions
// (namespace/name) and reflector; it is built on demand, never stored.
func (p *PodInfo) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, UID: p.UID}
}

// GetObjectKind implements runtime.Object.
func (p *PodInfo) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object. Interfaces are never
// changed once made, so the copy shares them.
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
