package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// IPClaim reserves one address of one network for one pod interface. Its
// name is "<network>.<address>" (IPv4 dots and fully expanded IPv6 colons
// written as dashes), so creating it is the reservation: the API server
// refuses a second object of the same name. It is live while the pod it
// names (namespace, name and UID) exists and has not finished; a claim of
// a pod that is gone is dead, and any podnet agent may delete it or take
// its address over. It has no ownerReference, because Kubernetes' garbage
// collector never deletes a cluster-scoped object on behalf of a namespaced
// owner such as a Pod.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=ipc,categories=podnet
// +kubebuilder:printcolumn:name="Network",type=string,JSONPath=`.spec.network`
// +kubebuilder:printcolumn:name="Address",type=string,JSONPath=`.spec.address`
// +kubebuilder:printcolumn:name="Namespace",type=string,JSONPath=`.spec.pod.namespace`
// +kubebuilder:printcolumn:name="Pod",type=string,JSONPath=`.spec.pod.name`
// +kubebuilder:printcolumn:name="Interface",type=string,JSONPath=`.spec.interface`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type IPClaim struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec says which address is held by whom. It never changes.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="an IPClaim is immutable; delete it to release the address"
	Spec IPClaimSpec `json:"spec"`
}

// IPClaimSpec is one reserved address.
type IPClaimSpec struct {
	// Network is the name of the network the address belongs to.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	Network string `json:"network"`

	// Address is the reserved IP address, without prefix length.
	// +required
	// +kubebuilder:validation:MinLength=2
	// +kubebuilder:validation:MaxLength=39
	Address string `json:"address"`

	// Pod is the pod that holds the address.
	// +required
	Pod PodReference `json:"pod"`

	// Interface is the interface inside the pod that carries the address.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=15
	Interface string `json:"interface"`
}

// PodReference names a pod, including its UID so that a new pod of the same
// name is never mistaken for the old one.
type PodReference struct {
	// Namespace of the pod.
	// +required
	Namespace string `json:"namespace"`
	// Name of the pod.
	// +required
	Name string `json:"name"`
	// UID of the pod.
	// +required
	UID string `json:"uid"`
}

// IPClaimList is a list of IPClaims.
// +kubebuilder:object:root=true
type IPClaimList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []IPClaim `json:"items"`
}
