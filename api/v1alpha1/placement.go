package v1alpha1

// NetworkNodeSelector selects nodes by their labels, in the shape of a
// metav1.LabelSelector: every matchLabels pair and every matchExpressions
// entry must hold. It converts one to one into the requirements of a
// pod's required node affinity (matchLabels k: v is "k In [v]").
type NetworkNodeSelector struct {
	// MatchLabels are labels a node must carry with exactly these values.
	// +optional
	// +kubebuilder:validation:MaxProperties=16
	MatchLabels map[string]string `json:"matchLabels,omitempty"`

	// MatchExpressions are further requirements on a node's labels.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	MatchExpressions []NodeSelectorExpression `json:"matchExpressions,omitempty"`
}

// NodeSelectorExpression is one requirement on a node label.
// +kubebuilder:validation:XValidation:rule="(self.operator == 'In' || self.operator == 'NotIn') == (has(self.values) && self.values.size() > 0)",message="In and NotIn need values; Exists and DoesNotExist take none"
type NodeSelectorExpression struct {
	// Key is the node label's key, e.g. topology.kubernetes.io/zone.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`
	Key string `json:"key"`

	// Operator is In, NotIn, Exists or DoesNotExist.
	// +required
	// +kubebuilder:validation:Enum=In;NotIn;Exists;DoesNotExist
	Operator string `json:"operator"`

	// Values are the label values of In and NotIn.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
	Values []string `json:"values,omitempty"`
}

// ReasonNodeCannotCarry is the networks-ready reason (and Event reason)
// of a pod bound to a node that cannot carry one of its networks: the
// node lacks a NIC, an address, an underlay or a kernel module the
// network needs, or is outside its nodeSelector. The pod gets none of its
// networks; its node's agent looks again when what the node has changes.
const ReasonNodeCannotCarry = "NodeCannotCarry"
