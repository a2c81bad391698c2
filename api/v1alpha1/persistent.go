package v1alpha1

import (
	"crypto/sha256"
	"encoding/hex"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MaxReleaseAfter is the longest grace an admin may give the addresses of
// a StatefulSet's pod once the StatefulSet no longer keeps them (the
// ipam.persistent.releaseAfter CEL bound says the same).
const MaxReleaseAfter = "168h"

// PersistentIPAM lets the pods of a StatefulSet keep their addresses (and
// their MAC, when the network has a macRange) across deletion and
// recreation: pod "<statefulset>-<ordinal>" gets back what the pod of that
// name held before, on whichever node it lands. The addresses stay reserved
// while the StatefulSet (the same object, by UID) exists and its replicas
// reach the ordinal; once it is deleted or scaled below the ordinal they
// are released after releaseAfter. Reserved addresses keep their quota
// slots, so they count against the namespace's maxAddressesPerNamespace.
// +kubebuilder:validation:XValidation:rule="duration(self.releaseAfter) >= duration('0s') && duration(self.releaseAfter) <= duration('168h')",message="releaseAfter must be between 0s and 168h"
type PersistentIPAM struct {
	// StatefulSets, when true, keeps the addresses of pods whose
	// controller is a StatefulSet (pod name "<statefulset>-<ordinal>")
	// for the next pod of the same name. Other pods are not affected.
	// +required
	StatefulSets bool `json:"statefulSets"`

	// ReleaseAfter is how long the addresses stay reserved once the
	// StatefulSet no longer keeps them (deleted, or scaled below the
	// pod's ordinal), e.g. "10m"; at most 168h. A claim keeps the grace it
	// was made with.
	// +required
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	ReleaseAfter metav1.Duration `json:"releaseAfter"`
}

// ApprovedPersistence is the persistence an approval grants one
// interface's addresses and MAC (the profile's ipam.persistent).
type ApprovedPersistence struct {
	// StatefulSets: pods of a StatefulSet keep their addresses for the
	// next pod of the same name.
	StatefulSets bool `json:"statefulSets,omitempty"`
	// ReleaseAfterSeconds is the grace once the StatefulSet no longer
	// keeps them.
	ReleaseAfterSeconds int32 `json:"releaseAfterSeconds,omitempty"`
}

// StatefulSetReservation on a claim (IPClaim or MACClaim) says the claim
// outlives its pod: it stays reserved for the next pod of the same
// namespace and name whose controller is the StatefulSet of this name and
// UID, while that StatefulSet's replicas reach the pod's ordinal.
type StatefulSetReservation struct {
	// Name of the StatefulSet; the pod is named "<name>-<ordinal>".
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// UID of the StatefulSet, so that a new StatefulSet of the same name
	// never inherits the old one's addresses.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	UID string `json:"uid"`

	// ReleaseAfterSeconds is how long the claim stays once the
	// StatefulSet no longer keeps it.
	// +required
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=604800
	ReleaseAfterSeconds int32 `json:"releaseAfterSeconds"`
}

const (
	// StatefulSetLabel on a reserved claim carries the UID of the
	// StatefulSet it is reserved for, so a StatefulSet's scale-down or deletion finds its
	// claims with a label selector.
	StatefulSetLabel = "podnet.io/statefulset-uid"

	// ReservedPodLabel on a reserved claim carries ReservedPodKey of its
	// pod's namespace and name, so the next pod of that name finds the claim on
	// whichever node it was made.
	ReservedPodLabel = "podnet.io/held-pod"
)

// ReservedPodKey is the ReservedPodLabel value of a pod's namespace and
// name: a hash, since the two together may be longer than a label value.
func ReservedPodKey(namespace, name string) string {
	sum := sha256.Sum256([]byte(namespace + "/" + name))
	return hex.EncodeToString(sum[:20])
}
