package v1alpha1

// MaxDRAAttachmentsPerNode bounds DRAOffer.AttachmentsPerNode: each
// attachment is one published device, and the scheduler weighs every device
// of every node for every claim.
const MaxDRAAttachmentsPerNode = 128

// DefaultDRAAttachmentsPerNode is the CRD's default of
// DRAOffer.AttachmentsPerNode (TestCRDDRAOffer holds them equal).
const DefaultDRAAttachmentsPerNode = 16

// DRAOffer is how a network is offered through Dynamic Resource Allocation.
type DRAOffer struct {
	// AttachmentsPerNode is how many interfaces of this network one node
	// takes through ResourceClaims: the node publishes that many devices
	// of the network, and each allocated claim holds one.
	// +optional
	// +kubebuilder:default=16
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=128
	AttachmentsPerNode int32 `json:"attachmentsPerNode,omitempty"`
}
