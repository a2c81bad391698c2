package v1alpha1

// HoldMode is how a podnet pod is kept from running its app before its
// approved networks exist. The admin picks one for the cluster (the
// webhook's --hold-pods, Helm's holdPods); the webhook, the agent and the
// manifests name the modes through these constants.
type HoldMode string

const (
	// HoldWaitInitContainer: the webhook injects the podnet-wait init
	// container, which returns once the agent reported the networks. Works
	// on every runtime; costs an init container per pod.
	HoldWaitInitContainer HoldMode = "waitInitContainer"

	// HoldAttachAtSandboxSetup: podnet's chained CNI plugin (podnet-cni)
	// holds the sandbox's CNI ADD until the agent attached; every node's
	// conflist must chain it.
	HoldAttachAtSandboxSetup HoldMode = "attachAtSandboxSetup"

	// HoldNRI: the agent serves an NRI plugin that starts the attach at
	// RunPodSandbox and refuses CreateContainer until the approved
	// interfaces exist (containerd 2, CRI-O).
	HoldNRI HoldMode = "nri"
)

// NRI plugin identity: the agent registers under this name and index, and
// the webhook names it in NRIRequiredPluginsAnnotation so that the
// runtime's default validator refuses a podnet pod's containers when the
// plugin did not process them (agent down, hung or restarting).
const (
	NRIPluginName  = "podnet"
	NRIPluginIndex = "10"

	// NRIRequiredPluginsAnnotation is NRI's pod annotation listing the
	// plugins that must process every container of the pod (a YAML list).
	// NRI also reads "<key>/pod" and "<key>/container.<name>", the latter
	// first: a tenant's own value under either would override podnet's.
	NRIRequiredPluginsAnnotation = "required-plugins.noderesource.dev"
)
