package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Approval is the webhook's fully resolved decision for one pod: everything
// the agent needs to build the pod's networks, and nothing it has to look up
// or decide. The webhook stores its canonical JSON in ApprovedAnnotation and
// signs those exact bytes (ApprovedSignatureAnnotation); the agent verifies
// the signature with the public key and executes only what is written here.
//
// The pod's UID and creation time do not exist yet when the webhook sees a
// CREATE (the API server fills them right after mutating admission), so a
// new pod's approval is bound to the namespace, the service account, the
// exact request text and the time it was issued: the agent accepts it only
// for a pod created within a short window after IssuedAt, so a stored
// approval cannot be replayed onto a later pod. On UPDATE the webhook sees
// the pod's UID and binds the approval to it instead (PodUID).
//
// A ResourceClaim asking for podnet devices gets its approval in the same
// annotations, on CREATE only (its spec never changes afterwards). Its name
// and UID may not exist yet (a template's claims use generateName), so it
// is bound like a new pod: to the namespace, the hash of the claim's
// podnet request text (approval.ClaimRequestText) and IssuedAt against the
// claim's creationTimestamp. It names no service account: a claim runs as
// no one, and profiles grant to namespaces only (ResourceClaim).
type Approval struct {
	// KeyID names the Ed25519 key that signed the approval: the first 8
	// bytes of the SHA-256 of its public key, in hex. Agents trust a set of
	// public keys, so keys can rotate without a gap.
	KeyID string `json:"keyID"`
	// IssuedAt is when the webhook signed the approval, to the second (the
	// precision of metadata.creationTimestamp).
	IssuedAt metav1.Time `json:"issuedAt"`
	// PodUID, when set, is the only pod the approval is valid for. The
	// webhook sets it on UPDATE, where the pod already has its UID; a
	// CREATE's approval has none and is bound by IssuedAt instead.
	PodUID string `json:"podUID,omitempty"`
	// Namespace the approval was issued for.
	Namespace string `json:"namespace"`
	// ServiceAccount the pod runs as; empty on a ResourceClaim's approval,
	// which any pod of the namespace naming the claim may use.
	ServiceAccount string `json:"serviceAccount"`
	// ResourceClaim is set on the approval of a ResourceClaim, whose
	// RequestHash is that of approval.ClaimRequestText: the agent holds a
	// claim's approval to its claim and never takes it for a pod's.
	ResourceClaim bool `json:"resourceClaim,omitempty"`
	// RequestHash is the hex SHA-256 of the NetworksAnnotation value it
	// answers (of a claim's podnet request text, for a ResourceClaim); the
	// agent refuses an approval for another request.
	RequestHash string `json:"requestHash"`
	// Profiles that granted something, with the generation that was read.
	Profiles []ProfileRef `json:"profiles"`
	// PrimaryMTU, when not zero, is the MTU to set on the primary interface.
	PrimaryMTU int32 `json:"primaryMTU,omitempty"`
	// Interfaces in request order.
	Interfaces []ApprovedInterface `json:"interfaces"`
}

// ProfileRef names a NetworkProfile at a generation.
type ProfileRef struct {
	// Name of the NetworkProfile.
	Name string `json:"name"`
	// Generation of the profile that was read, so that an approval can be
	// traced to the exact rules it was judged by.
	Generation int64 `json:"generation"`
}

// NetworkKind says how an interface is made.
type NetworkKind string

// The kinds of interface podnet makes.
const (
	KindBridge  NetworkKind = "bridge"
	KindMacvlan NetworkKind = "macvlan"
	KindIPVlan  NetworkKind = "ipvlan"
	KindVLAN    NetworkKind = "vlan"
	// KindWireGuard and KindVXLANTunnel are the two kinds of a tunnel
	// network (tunnel.wireguard, tunnel.vxlan).
	KindWireGuard   NetworkKind = "wireguard"
	KindVXLANTunnel NetworkKind = "vxlan-tunnel"
	// KindHostDevice is a node NIC moved whole into the pod.
	KindHostDevice NetworkKind = "host-device"
)

// ApprovedInterface is one resolved interface.
type ApprovedInterface struct {
	// Interface is the name inside the pod (net1, net2, … unless asked).
	Interface string `json:"interface"`
	// Network is the requested network name; IPClaims are keyed by it.
	Network string `json:"network"`
	// Profile that granted the network.
	Profile string `json:"profile"`
	// Kind of interface.
	Kind NetworkKind `json:"kind"`
	// Bridge is the node bridge, for KindBridge.
	Bridge string `json:"bridge,omitempty"`
	// VXLAN is the overlay that makes a KindBridge network span nodes.
	VXLAN *ApprovedVXLAN `json:"vxlan,omitempty"`
	// Uplink is the host interface that makes a KindBridge network span
	// nodes, as a port of its bridge.
	Uplink string `json:"uplink,omitempty"`
	// Tunnel is the resolved tunnel of a wireguard or vxlan-tunnel
	// interface.
	Tunnel *ApprovedTunnel `json:"tunnel,omitempty"`
	// Devices selects the node NICs a host-device interface may take; the
	// agent picks a free one.
	Devices *ApprovedDevices `json:"devices,omitempty"`
	// VLAN is the access VLAN (bridge) or the VLAN ID (vlan); 0 = none.
	VLAN int32 `json:"vlan,omitempty"`
	// Master is the host parent link for macvlan, ipvlan and vlan.
	Master string `json:"master,omitempty"`
	// Mode is the macvlan or ipvlan mode.
	Mode string `json:"mode,omitempty"`
	// MTU; 0 = the kernel's default.
	MTU int32 `json:"mtu,omitempty"`
	// MAC address; empty = chosen by the kernel.
	MAC string `json:"mac,omitempty"`
	// MACRange, when set, is where the agent claims the MAC from (a
	// static MAC is claimed too); nil = no claim.
	MACRange *ApprovedMACRange `json:"macRange,omitempty"`
	// RawSockets says the profile lets the pod keep NET_RAW for this
	// network (allowRawSockets).
	RawSockets bool `json:"rawSockets,omitempty"`
	// PortSecurityDisabled says the profile turned port security off for
	// this network (portSecurity.disabled); false, the default, keeps the
	// pod's port to its own MAC and addresses.
	PortSecurityDisabled bool `json:"portSecurityDisabled,omitempty"`
	// Router says the pod's port may send router advertisements, redirects
	// and DHCP server answers (portSecurity.allowRouters).
	Router bool `json:"router,omitempty"`
	// AcceptRA says the pod interface keeps the kernel's accept_ra and
	// accept_redirects (acceptRouterAdvertisements); false, the default,
	// sets them to 0.
	AcceptRA bool `json:"acceptRA,omitempty"`
	// Offloads are the ethtool features to turn on (true) or off, by the
	// kernel's names; nil = none asked.
	Offloads map[string]bool `json:"offloads,omitempty"`
	// SLAAC: the interface takes an IPv6 address from the network's router
	// advertisements, and is ready once it has one (the request's slaac;
	// only on a network with acceptRouterAdvertisements).
	SLAAC bool `json:"slaac,omitempty"`
	// Settings are the per-interface kernel settings to write, by their
	// name in pkg/ifsettings; nil = none asked.
	Settings map[string]int64 `json:"settings,omitempty"`
	// CheckDuplicates says the agent probes the interface's addresses on
	// the wire before it is ready (addressCheck.duplicates).
	CheckDuplicates bool `json:"checkDuplicates,omitempty"`
	// CheckGateway says the network's gateways (ipam.gateways) must
	// answer the interface before it is ready (addressCheck.gateway).
	CheckGateway bool `json:"checkGateway,omitempty"`
	// IPAM; nil = no address.
	IPAM *ApprovedIPAM `json:"ipam,omitempty"`
	// Routes to add inside the pod through this interface.
	Routes []ApprovedRoute `json:"routes,omitempty"`
	// DefaultRoute are the gateways (one per family at most) via which this
	// interface carries the pod's default route instead of eth0.
	DefaultRoute []string `json:"defaultRoute,omitempty"`
	// VRF, when set, is the VRF inside the pod the interface is enslaved
	// to; its routes live in the VRF's table.
	VRF *ApprovedVRF `json:"vrf,omitempty"`
}

// ApprovedDevices is a host-device network's selector (hostDevice).
type ApprovedDevices struct {
	Names        []string `json:"names,omitempty"`
	Drivers      []string `json:"drivers,omitempty"`
	PCIAddresses []string `json:"pciAddresses,omitempty"`
	// VF, when set, selects the SR-IOV VFs of the NICs the lists select,
	// and says what the agent sets on each through its PF (the VLAN and
	// MAC are the interface's).
	VF *ApprovedVF `json:"vf,omitempty"`
}

// ApprovedVF is what the agent sets on a VF through its PF.
type ApprovedVF struct {
	SpoofCheck bool `json:"spoofCheck"`
	Trust      bool `json:"trust"`
}

// ApprovedVXLAN is the resolved overlay of a bridge network.
type ApprovedVXLAN struct {
	// VNI is the VXLAN network identifier.
	VNI int32 `json:"vni"`
	// Port is the UDP destination port.
	Port int32 `json:"port"`
	// LocalInterface is the node interface the overlay is bound to; empty
	// = none.
	LocalInterface string `json:"localInterface,omitempty"`
	// LocalAddress is the overlay's source address; empty = the Node's
	// InternalIP of the underlay's family, found by the agent.
	LocalAddress string `json:"localAddress,omitempty"`
	// UnderlayCIDRs are the networks the nodes' underlay addresses must lie
	// in (the profile's underlay.cidrs); empty = any usable address.
	UnderlayCIDRs []string `json:"underlayCIDRs,omitempty"`
}

// ApprovedIPAM says how the interface gets its addresses.
type ApprovedIPAM struct {
	// Pools to allocate from (one address per pool), as CIDRs.
	Pools []string `json:"pools"`
	// Gateways of the network, never allocated.
	Gateways []string `json:"gateways,omitempty"`
	// Static addresses (CIDR, inside a pool) asked for by the tenant; when
	// set they replace allocation from the pools of their family.
	Static []string `json:"static,omitempty"`
	// AddressSpace is the layer-2 domain the addresses belong to
	// (pkg/ipam/rules.SpaceName): claims and quota slots are keyed by it. Empty on
	// approvals issued before it was signed; the agent derives it then.
	AddressSpace string `json:"addressSpace,omitempty"`
	// MaxPerNamespace is the effective quota: how many addresses of each
	// IP family the pod's namespace may hold in AddressSpace, the strictest
	// cap of every profile network in that space
	// (ipam.maxAddressesPerNamespace, or its default); 0 = no cap.
	MaxPerNamespace int32 `json:"maxPerNamespace,omitempty"`
	// Persistent, when set, keeps a StatefulSet pod's addresses and MAC
	// for the next pod of its name (ipam.persistent); nil = released with
	// the pod.
	Persistent *ApprovedPersistence `json:"persistent,omitempty"`
}

// ApprovedRoute is a route inside the pod.
type ApprovedRoute struct {
	// Dst is the destination CIDR.
	Dst string `json:"dst"`
	// Gateway is the next hop; empty = on-link.
	Gateway string `json:"gateway,omitempty"`
}
