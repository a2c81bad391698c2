package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodePolicy is the network policy of one node's pod interfaces on podnet
// networks, named after the node. podnet-controller writes it from the
// MultiNetworkPolicies, the profiles' policy floors and the pods on each
// network (package netpolicy): the cluster-wide work runs once, and each
// node's agent watches its own object only and writes it into its pods'
// network namespaces. Identical allow lists of a node are written once
// (sets) and named by its interfaces, so that the pods of one namespace
// under one policy cost one list, not one each.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=npol,categories=podnet
// +kubebuilder:printcolumn:name="Interfaces",type=integer,JSONPath=`.spec.interfaces.size()`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type NodePolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec NodePolicySpec `json:"spec"`
}

// NodePolicySpec is every isolated pod interface of the node.
type NodePolicySpec struct {
	// Peers are the address lists the sets name, each once: the pods of
	// a namespace or a tenant, which many sets of a node allow on
	// different ports, are written once per node.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=10000
	Peers []PeerList `json:"peers,omitempty"`

	// Sets are the allow lists the interfaces name, each once.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=10000
	Sets []PolicySet `json:"sets,omitempty"`

	// Interfaces are the pod interfaces isolated in a direction; an
	// interface not listed is isolated by its network's floor only
	// (approval) or not at all.
	// +optional
	// +kubebuilder:validation:MaxItems=10000
	Interfaces []InterfacePolicy `json:"interfaces,omitempty"`
}

// PeerList is a list of address prefixes.
type PeerList struct {
	// Name is the list's name within the object.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=16
	Name string `json:"name"`

	// Prefixes are the list's address prefixes, separated by spaces
	// (one string, not one item each: the API server validates and
	// patches a list item by item, and a node's lists hold thousands).
	// +required
	Prefixes string `json:"prefixes"`
}

// PolicySet is one allow list.
type PolicySet struct {
	// Name is the set's name within the object.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=16
	Name string `json:"name"`

	// Allow are the allowed peers, protocols and ports, each
	// "<peers> <protocol> <port>[-<port>]": a peer list's name, the
	// protocol tcp, udp, sctp, a number or any (netpolicy.NodeSpec):
	// e.g. "p0 tcp 80", "p1 any 0-65535". Empty allows nothing.
	// +optional
	// +kubebuilder:validation:MaxItems=100000
	// +kubebuilder:validation:items:MaxLength=64
	Allow []string `json:"allow,omitempty"`
}

// InterfacePolicy isolates one pod interface in the directions it names.
type InterfacePolicy struct {
	// PodUID is the pod's UID.
	// +required
	// +kubebuilder:validation:MaxLength=36
	PodUID string `json:"podUID"`

	// Interface is the interface's name inside the pod.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=15
	Interface string `json:"interface"`

	// Ingress names the set of what may reach the pod through the
	// interface; empty: not isolated.
	// +optional
	// +kubebuilder:validation:MaxLength=16
	Ingress string `json:"ingress,omitempty"`

	// Egress names the set of what the pod may send through the
	// interface; empty: not isolated.
	// +optional
	// +kubebuilder:validation:MaxLength=16
	Egress string `json:"egress,omitempty"`
}

// NodePolicyList is a list of NodePolicies.
// +kubebuilder:object:root=true
type NodePolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodePolicy `json:"items"`
}
