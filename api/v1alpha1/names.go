package v1alpha1

// The names below are the contract between the webhook, the agent, the
// manifests and the tests. Everything refers to them through these constants.
const (
	// GroupName is the API group of podnet's resources.
	GroupName = "podnet.io"

	// SystemNamespace is the namespace podnet is installed into by
	// default; the webhook's namespaceSelector excludes it.
	SystemNamespace = "podnet-system"

	// AgentName names the node agent: its DaemonSet, service account,
	// controller, the reporting component of its Events and its log lines.
	AgentName = "podnet-agent"

	// ControllerName names podnet-controller: its user agent, its leader
	// election lease, the reporting component of its Events and its log
	// lines.
	ControllerName = "podnet-controller"

	// AgentUser is the agent's service account as the API server names it;
	// the webhook's matchConditions and deploy/policies spell it out too.
	AgentUser = "system:serviceaccount:" + SystemNamespace + ":" + AgentName

	// EnabledLabel opts a namespace in: the webhook's namespaceSelector
	// matches namespaces that carry it with the value "true".
	EnabledLabel = "podnet.io/enabled"

	// NetworksAnnotation is the tenant's request, in Multus syntax:
	// "data, uplink@net2" or a JSON list of NetworkRequest objects.
	NetworksAnnotation = "podnet.io/networks"

	// ApprovedAnnotation holds the canonical JSON of the Approval that the
	// webhook derived from NetworksAnnotation.
	ApprovedAnnotation = "podnet.io/approved"

	// ApprovedSignatureAnnotation holds the base64 Ed25519 signature of
	// ApprovedAnnotation's exact bytes.
	ApprovedSignatureAnnotation = "podnet.io/approved-signature"

	// NetworkStatusAnnotation is written by the agent, in the JSON shape of
	// Multus' k8s.v1.cni.cncf.io/network-status.
	NetworkStatusAnnotation = "podnet.io/network-status"

	// MultusNetworksAnnotation is Multus' request annotation. The webhook
	// reads it as a podnet request only when told to (migration from
	// Multus).
	MultusNetworksAnnotation = "k8s.v1.cni.cncf.io/networks"

	// MultusNetworkStatusAnnotation is Multus' status annotation. The agent
	// writes it too, with the same value as NetworkStatusAnnotation, where
	// no Multus writes it, so the tools of that ecosystem read it.
	MultusNetworkStatusAnnotation = "k8s.v1.cni.cncf.io/network-status"

	// WaitAnnotation set to "false" on a pod opts out of the injected wait
	// init container; "true" asks for it even where the webhook attaches
	// at sandbox setup.
	WaitAnnotation = "podnet.io/wait"

	// NetworksReadyCondition is the pod readiness gate and the condition the
	// agent sets when the approved networks are in place.
	NetworksReadyCondition = "podnet.io/networks-ready"

	// WaitContainerName is the name of the injected init container.
	WaitContainerName = "podnet-wait"

	// AgentRunDir is the agent's folder on the node, where it serves the
	// chained CNI plugin's socket by default. A podnet pod may not mount it
	// (or any host folder that holds it) through hostPath.
	AgentRunDir = "/run/podnet"

	// NodeVNIsAnnotation on a Node lists, comma-separated and sorted, the
	// VNIs of the VXLAN networks the node's agent carries: the other nodes
	// flood a network only to the nodes that list its VNI, and accept its
	// packets only from them. Only that node's agent may set it
	// (ValidatingAdmissionPolicy podnet-agent-node-vnis).
	NodeVNIsAnnotation = "podnet.io/vxlan-vnis"

	// AnnotationPrefix is what the webhook's matchConditions look for: any
	// annotation under it sends the pod through the webhook.
	AnnotationPrefix = "podnet.io/"

	// PodUIDLabel on an IPClaim carries the UID of the pod holding the
	// address, so a pod's claims are found with a label selector (served
	// from an informer cache) instead of a scan of every claim.
	PodUIDLabel = "podnet.io/pod-uid"

	// NetworkLabel on an IPClaim carries the network name, so the claims of
	// one network can be listed together.
	NetworkLabel = "podnet.io/network"

	// NodeLabel on an IPClaim carries the name of the node whose agent
	// created it, so each agent caches and watches only its own node's
	// claims (a label selector the API server applies) instead of every
	// claim of the cluster.
	NodeLabel = "podnet.io/node"

	// NamespaceLabel on an IPClaim carries the namespace of the pod holding
	// it, so one namespace's addresses and quota slots are listed with a
	// label selector. Claims made before claims were named after the
	// address alone lack it, which is how allocators find them.
	NamespaceLabel = "podnet.io/namespace"

	// AddressSpaceLabel on an IPClaim carries the address space
	// (pkg/ipam/rules.SpaceName) its address or quota slot belongs to. Claims made
	// before claims were keyed by address space lack it, which is how
	// allocators find them.
	AddressSpaceLabel = "podnet.io/address-space"
)
