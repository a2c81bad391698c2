package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MACClaim reserves one MAC address of a network's macRange for one pod
// interface, or one of a namespace's MAC quota slots of a network. A MAC
// claim is named after the MAC alone (MACClaimName: "02-00-5e-00-00-07"), so
// creating it is the reservation and the API server refuses a second one
// cluster-wide, whichever network, profile or range asked for it: two
// profiles with overlapping ranges never hand out one MAC twice. A quota
// slot (spec.slot set) is named MACSlotName ("slot.<network>.<namespace>.<k>").
//
// A claim is live while the pod it names (namespace, name and UID) exists;
// the pod's agent deletes it when the interface goes, and podnet-controller
// deletes the claims of pods that are gone. Like IPClaim it has no
// ownerReference: the garbage collector never deletes a cluster-scoped
// object on behalf of a Pod.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=macc,categories=podnet
// +kubebuilder:printcolumn:name="Network",type=string,JSONPath=`.spec.network`
// +kubebuilder:printcolumn:name="MAC",type=string,JSONPath=`.spec.mac`
// +kubebuilder:printcolumn:name="Slot",type=integer,JSONPath=`.spec.slot`,priority=1
// +kubebuilder:printcolumn:name="Namespace",type=string,JSONPath=`.spec.pod.namespace`
// +kubebuilder:printcolumn:name="Pod",type=string,JSONPath=`.spec.pod.name`
// +kubebuilder:printcolumn:name="Interface",type=string,JSONPath=`.spec.interface`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type MACClaim struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec says which MAC (or quota slot) is held by whom. It never
	// changes, but for the pod UID of a claim held for a StatefulSet.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf || (has(oldSelf.statefulSet) && has(self.statefulSet) && has(self.mac) == has(oldSelf.mac) && has(self.slot) == has(oldSelf.slot))",message="a MACClaim is immutable; delete it to release the MAC; only the next pod of the same name may take over a claim held for a StatefulSet"
	Spec MACClaimSpec `json:"spec"`
}

// MACClaimSpec is one reserved MAC or one quota slot.
// +kubebuilder:validation:XValidation:rule="has(self.slot) != (has(self.mac) && size(self.mac) > 0)",message="exactly one of mac and slot must be set"
type MACClaimSpec struct {
	// Network is the name of the network the MAC was asked through.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="network is immutable"
	Network string `json:"network"`

	// MAC is the reserved address, lower case, colon separated. Empty on a
	// quota slot.
	// +optional
	// +kubebuilder:validation:MaxLength=17
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="mac is immutable"
	MAC string `json:"mac,omitempty"`

	// Slot, when set, makes this claim a quota slot: the pod holds the
	// slot-th of the MACs its namespace may have from the network's range.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=4095
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="slot is immutable"
	Slot *int32 `json:"slot,omitempty"`

	// Pod is the pod that holds the MAC.
	// +required
	Pod PodReference `json:"pod"`

	// Interface is the interface inside the pod that carries the MAC.
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

// MACClaimList is a list of MACClaims.
// +kubebuilder:object:root=true
type MACClaimList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MACClaim `json:"items"`
}
