package v1alpha1

// HoldAuto: the webhook holds each new pod by NRI while every node reports
// that its runtime enforces NRI's required plugins (NodeHoldNRILabel
// NodeHoldNRIEnforced), and by the wait init container otherwise. The
// controller makes the choice for the cluster (HoldChoiceConfigMap); the
// webhook reads it (hold.AutoOf). Not a mode a pod is held by: the webhook resolves it
// to HoldNRI or HoldWaitInitContainer for each pod.
const HoldAuto HoldMode = "auto"

// What each agent reports of its node's NRI enforcement, on its own Node.
const (
	// NodeHoldNRILabel is the label the node's agent sets on its own Node:
	// whether the node's runtime refuses a container whose pod names, in
	// NRIRequiredPluginsAnnotation, a plugin that did not process it (NRI's
	// default validator is on), as the agent's probe found it.
	NodeHoldNRILabel = "hold.podnet.io/nri"
	// NodeHoldNRIEnforced: the probe's container was refused by the
	// validator.
	NodeHoldNRIEnforced = "enforced"
	// NodeHoldNRIUnenforced: the probe's container was created; the
	// runtime lets containers run without the plugins their pod requires.
	NodeHoldNRIUnenforced = "unenforced"
	// NodeHoldNRIUnknown: the agent could not probe (no NRI connection,
	// no pinned image, the runtime failed otherwise or in time).
	NodeHoldNRIUnknown = "unknown"
)

// NodeHoldNRIValues are the values an agent may set NodeHoldNRILabel to.
var NodeHoldNRIValues = []string{NodeHoldNRIEnforced, NodeHoldNRIUnenforced, NodeHoldNRIUnknown}

// The controller's choice of hold for HoldAuto, written on one ConfigMap
// in podnet's namespace that the webhook watches as metadata only (the
// webhook never watches Nodes). The choice and the counts it was made from
// are annotations, so that the webhook reads no data.
const (
	// HoldChoiceConfigMap is the ConfigMap's name.
	HoldChoiceConfigMap = "podnet-hold-choice"
	// HoldChoiceAnnotation holds the chosen HoldMode: HoldNRI or
	// HoldWaitInitContainer.
	HoldChoiceAnnotation = "podnet.io/hold-choice"
	// HoldChoiceNodesAnnotation and HoldChoiceEnforcedAnnotation hold the
	// counts the choice was made from (nodes, and those reporting
	// NodeHoldNRIEnforced), for people reading it.
	HoldChoiceNodesAnnotation    = "podnet.io/hold-choice-nodes"
	HoldChoiceEnforcedAnnotation = "podnet.io/hold-choice-enforced"
)
