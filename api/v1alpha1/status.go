package v1alpha1

// What the agent reports on a pod, read by kubectl podnet, the tests and
// the tools of the Multus ecosystem: the reasons of the networks-ready
// condition and of Events, and the entries of the network-status
// annotation.

// Reasons of the podnet.io/networks-ready condition and of Events.
const (
	// ReasonAttached: every approved interface is in place.
	ReasonAttached = "NetworksAttached"
	// ReasonNoNetworks: the pod asks for no networks (any more).
	ReasonNoNetworks = "NoNetworks"
	// ReasonInvalidApproval: the approval is missing, does not verify, or
	// was issued for another namespace, service account or request.
	ReasonInvalidApproval = "InvalidApproval"
	// ReasonIPAMFailed: an address could not be reserved.
	ReasonIPAMFailed = "IPAMFailed"
	// ReasonQuotaExceeded: the pod's namespace already holds as many
	// addresses of the network's address space as its quota (the strictest
	// ipam.maxAddressesPerNamespace of the profiles on it) allows; the agent tries again with backoff and attaches the pod once
	// one is freed.
	ReasonQuotaExceeded = "QuotaExceeded"
	// ReasonAttachFailed: the dataplane could not build an interface.
	ReasonAttachFailed = "AttachFailed"
	// ReasonAddressConflict: another MAC on the network holds an address
	// of the pod's interface (the network's addressCheck.duplicates); the
	// interface stays down and the agent checks again with backoff.
	ReasonAddressConflict = "AddressConflict"
	// ReasonGatewayUnanswered: a gateway of the network did not answer the
	// pod's interface (addressCheck.gateway); retried as above.
	ReasonGatewayUnanswered = "GatewayUnanswered"
	// ReasonNoFreeHostDevice: no NIC on the node that the network's
	// hostDevice selects is free (each is another pod's, or the node's
	// own); the agent tries again with backoff and attaches the pod once
	// one is given back.
	ReasonNoFreeHostDevice = "NoFreeHostDevice"
	// ReasonGrantRevoked: the admin took back (part of) what the approval
	// grants: the namespace's opt-in or selecting labels, the profile, a
	// network of it, or the pool an address came from. The agent detached
	// those interfaces; the pod keeps running.
	ReasonGrantRevoked = "GrantRevoked"
	// ReasonGrantNarrowed: the admin narrowed a network under the pod
	// (a lower MTU maximum, fewer routes, no default route) and the agent
	// changed its interfaces in place; the networks stay ready. An
	// interface that cannot change in place is detached (GrantRevoked).
	ReasonGrantNarrowed = "GrantNarrowed"
	// ReasonDetached is the Event of removed interfaces.
	ReasonDetached = "NetworksDetached"
	// ReasonPrivilegedPod: the pod's spec breaks what its approval assumes
	// (policy.ValidatePodPrivilege): a container holds NET_ADMIN, SYS_ADMIN or
	// every capability, or NET_RAW on a network without raw sockets, or a
	// volume reaches the agent's folder. The webhook refuses such pods; one
	// that carries an approval anyway got it some other way (copied from
	// another pod), and gets nothing attached.
	ReasonPrivilegedPod = "PrivilegedPod"
	// ReasonUninstalling: podnet is being uninstalled (the uninstall mark is
	// on the agent's DaemonSet). The agent attaches nothing and has removed
	// the pod's podnet interfaces and addresses; a pod that was Ready stays
	// Ready on its primary network.
	ReasonUninstalling = "Uninstalling"
	// ReasonHoldNotEnforced: the networks are attached, but this node
	// cannot enforce the hold the webhook promised the pod (say, the mode
	// is nri and the node's NRI plugin is not connected to the runtime):
	// the app may have started before its networks. The message names the
	// mode and what the node lacks.
	ReasonHoldNotEnforced = "HoldNotEnforced"
)

// NetworkStatus is one entry of the network-status annotation, in the shape
// of Multus' k8s.v1.cni.cncf.io/network-status (the NAD client's
// NetworkStatus type decodes it field for field), so tools that read Multus'
// annotation read ours.
// +kubebuilder:object:generate=false
type NetworkStatus struct {
	// Name is "<namespace>/<network>", or the cluster network's name for
	// the default entry.
	Name      string   `json:"name"`
	Interface string   `json:"interface"`
	IPs       []string `json:"ips,omitempty"`
	MAC       string   `json:"mac,omitempty"`
	MTU       int      `json:"mtu,omitempty"`
	// Default marks the entry of the cluster's default network on eth0, as
	// Multus marks it. podnet never moves the default route, so it is
	// always that entry.
	Default bool `json:"default,omitempty"`
	// Tunnel, on the entry of a tunnel interface, names its endpoint
	// and, for WireGuard, the pod's public key.
	Tunnel *TunnelStatus `json:"podnet.io/tunnel,omitempty"`
	// DNS is always empty: no profile sets DNS for a network. It is written
	// as {} all the same, as Multus writes it when a plugin returns none.
	DNS DNS `json:"dns"`
}

// DNS is the dns object of a network-status entry, in Multus' shape.
// +kubebuilder:object:generate=false
type DNS struct {
	Nameservers []string `json:"nameservers,omitempty"`
	Domain      string   `json:"domain,omitempty"`
	Search      []string `json:"search,omitempty"`
	Options     []string `json:"options,omitempty"`
}

// DefaultClusterNetworkName names the default entry of the network-status
// when the agent is given no other name. Multus uses the name of the
// cluster network's CNI configuration, which the agent cannot know.
const DefaultClusterNetworkName = "cluster-network"

// Reasons of the Events about containers the runtime started before their
// pod's networks existed (a pod held by NRI whose plugin was hung or away).
const (
	// ReasonRestartedWithoutNetworks: the agent stopped such a container
	// once the networks were attached, so that the kubelet starts it again
	// with them.
	ReasonRestartedWithoutNetworks = "RestartedWithoutNetworks"
	// ReasonStartedWithoutNetworks: such a container runs on without its
	// networks: the agent does not stop it, since the kubelet would not
	// start it again (restartPolicy Never, an ephemeral container).
	ReasonStartedWithoutNetworks = "StartedWithoutNetworks"
)
