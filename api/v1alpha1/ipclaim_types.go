package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// IPClaim reserves one address for one pod interface, or one quota slot of
// a namespace in an address space. An address claim is named after the
// address and its address space ("192-168-100-7.<space hash>", IPv4 dots
// and fully expanded IPv6 colons written as dashes), so creating it is the
// reservation: the API server refuses a second object of the same name,
// whichever network, profile or pool the address was asked through on that
// layer-2 domain. A quota slot (spec.slot set) is named
// "<space hash>.<namespace>.<family>.<slot>" and holds one of the addresses
// a namespace may have in the space. Claims made by earlier versions are
// named "<address>" or "<network>.<address>" (and slots
// "<pool>.<namespace>.<slot>"); they keep holding their address, in every
// address space, until released.
//
// A claim is live while the pod it names (namespace, name and UID) exists
// and has not finished; a claim of a pod that is gone is dead, and any
// podnet agent may delete it or take its address over, unless it is held
// for a StatefulSet (spec.statefulSet): then it waits for the next pod of
// its name, and podnet-controller releases it once the StatefulSet no
// longer holds it. It has no
// ownerReference, because Kubernetes' garbage collector never deletes a
// cluster-scoped object on behalf of a namespaced owner such as a Pod.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=ipc,categories=podnet
// +kubebuilder:printcolumn:name="Network",type=string,JSONPath=`.spec.network`
// +kubebuilder:printcolumn:name="Address",type=string,JSONPath=`.spec.address`
// +kubebuilder:printcolumn:name="Pool",type=string,JSONPath=`.spec.pool`
// +kubebuilder:printcolumn:name="Address-Space",type=string,JSONPath=`.spec.addressSpace`,priority=1
// +kubebuilder:printcolumn:name="Slot",type=integer,JSONPath=`.spec.slot`,priority=1
// +kubebuilder:printcolumn:name="Namespace",type=string,JSONPath=`.spec.pod.namespace`
// +kubebuilder:printcolumn:name="Pod",type=string,JSONPath=`.spec.pod.name`
// +kubebuilder:printcolumn:name="Interface",type=string,JSONPath=`.spec.interface`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type IPClaim struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec says which address is held by whom. It never changes, but for
	// the pod UID of a claim held for a StatefulSet (spec.statefulSet).
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf || (has(oldSelf.statefulSet) && has(self.statefulSet) && has(self.address) == has(oldSelf.address) && has(self.pool) == has(oldSelf.pool) && has(self.addressSpace) == has(oldSelf.addressSpace) && has(self.slot) == has(oldSelf.slot))",message="an IPClaim is immutable; delete it to release the address; only the next pod of the same name may take over a claim held for a StatefulSet"
	Spec IPClaimSpec `json:"spec"`
}

// IPClaimSpec is one reserved address or one quota slot.
// +kubebuilder:validation:XValidation:rule="has(self.slot) != (has(self.address) && size(self.address) > 0)",message="exactly one of address and slot must be set"
// +kubebuilder:validation:XValidation:rule="!has(self.slot) || (has(self.pool) && size(self.pool) > 0)",message="a quota slot names its pool"
type IPClaimSpec struct {
	// Network is the name of the network the address was asked through.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="network is immutable"
	Network string `json:"network"`

	// Address is the reserved IP address, without prefix length. Empty on
	// a quota slot.
	// +optional
	// +kubebuilder:validation:MaxLength=39
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="address is immutable"
	Address string `json:"address,omitempty"`

	// Pool is the pool (masked CIDR) the address was taken from, or the
	// pool whose quota the slot counts against. Empty on claims made before
	// pools were recorded.
	// +optional
	// +kubebuilder:validation:MaxLength=43
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="pool is immutable"
	Pool string `json:"pool,omitempty"`

	// AddressSpace is the layer-2 domain (a bridge, or a master link) the
	// address or slot belongs to: the same address may be claimed once in
	// each address space. Empty on claims made before claims were keyed by
	// address space; those hold their address in every space.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="addressSpace is immutable"
	AddressSpace string `json:"addressSpace,omitempty"`

	// Slot, when set, makes this claim a quota slot: the pod holds the
	// slot-th of the addresses its namespace may have in the pool. The pod
	// interface that holds it holds an address of the pool too (or is
	// about to).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=4095
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="slot is immutable"
	Slot *int32 `json:"slot,omitempty"`

	// Pod is the pod that holds the address.
	// +required
	Pod PodReference `json:"pod"`

	// Interface is the interface inside the pod that carries the address.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=15
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="interface is immutable"
	Interface string `json:"interface"`

	// StatefulSet, when set, keeps the claim after its pod is gone, for
	// the next pod of the same namespace and name whose controller is
	// this StatefulSet; that pod's agent takes the claim over by writing
	// its own pod UID (and node label) into it, the only change a claim
	// allows. Absent: the claim goes with its pod.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="statefulSet is immutable"
	StatefulSet *StatefulSetReservation `json:"statefulSet,omitempty"`
}

// PodReference names a pod, including its UID so that a new pod of the same
// name is never mistaken for the old one.
type PodReference struct {
	// Namespace of the pod.
	// +required
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="pod.namespace is immutable"
	Namespace string `json:"namespace"`
	// Name of the pod.
	// +required
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="pod.name is immutable"
	Name string `json:"name"`
	// UID of the pod.
	// +required
	// +kubebuilder:validation:MaxLength=63
	UID string `json:"uid"`
}

// IPClaimList is a list of IPClaims.
// +kubebuilder:object:root=true
type IPClaimList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []IPClaim `json:"items"`
}
