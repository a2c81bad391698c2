package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NetworkProfile is written by cluster admins. It says which opted-in
// namespaces may attach which extra networks to their pods, and within what
// limits. Tenants cannot create or change profiles; they can read them to see
// what they may ask for.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=np;netprofile,categories=podnet
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Namespace-Labels",type=string,JSONPath=`.spec.namespaceSelector.matchLabels`
// +kubebuilder:printcolumn:name="Max-Interfaces",type=integer,JSONPath=`.spec.maxInterfaces`
// +kubebuilder:printcolumn:name="Spanning",type=string,JSONPath=`.status.spanning`,priority=1
// +kubebuilder:printcolumn:name="Primary-MTU-Max",type=integer,JSONPath=`.spec.primaryInterface.mtu.max`,priority=1
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="In-Use",type=integer,JSONPath=`.status.addressesInUse`
// +kubebuilder:printcolumn:name="Least-Free",type=integer,JSONPath=`.status.leastAvailable`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type NetworkProfile struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is what the admin grants.
	// +required
	Spec NetworkProfileSpec `json:"spec"`

	// Status is observed state; it grants nothing.
	// +optional
	Status NetworkProfileStatus `json:"status,omitempty"`
}

// NetworkProfileSpec grants networks to the pods of some namespaces.
// +kubebuilder:validation:XValidation:rule="self.networks.size() > 0 || has(self.primaryInterface)",message="a profile grants at least one network or the primaryInterface tuning"
type NetworkProfileSpec struct {
	// NamespaceSelector selects, among the namespaces labelled
	// podnet.io/enabled=true, those whose pods may use this profile. An empty
	// selector selects every opted-in namespace.
	// +required
	NamespaceSelector metav1.LabelSelector `json:"namespaceSelector"`

	// MaxInterfaces is the largest number of podnet interfaces one pod may
	// have through this profile.
	// +optional
	// +kubebuilder:default=4
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=32
	MaxInterfaces int32 `json:"maxInterfaces,omitempty"`

	// Networks are the networks this profile offers, by name. Tenants ask for
	// them by this name in the podnet.io/networks annotation. Profiles that
	// select the same namespace combine by network name; the same name offered
	// differently by two such profiles is an admin error and is refused.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	Networks []Network `json:"networks,omitempty"`

	// PrimaryInterface limits the tuning tenants may ask for on the pod's
	// primary interface (eth0, made by the cluster's CNI). Absent: the primary
	// interface cannot be tuned.
	// +optional
	PrimaryInterface *PrimaryInterface `json:"primaryInterface,omitempty"`
}

// Network is one network offered to tenants. Exactly one of bridge, macvlan,
// ipvlan, vlan, tunnel and hostDevice says how the interface is made.
// +kubebuilder:validation:XValidation:rule="[has(self.bridge), has(self.macvlan), has(self.ipvlan), has(self.vlan), has(self.tunnel), has(self.hostDevice)].filter(x, x).size() == 1",message="exactly one of bridge, macvlan, ipvlan, vlan, tunnel, hostDevice must be set"
// +kubebuilder:validation:XValidation:rule="!has(self.hostDevice) || (!has(self.portSecurity) && (has(self.hostDevice.vf) || (!has(self.macRange) && !(has(self.allowStaticMAC) && self.allowStaticMAC))))",message="a hostDevice network gives the pod a whole NIC: its frames never cross the node, so portSecurity does not apply, and a NIC keeps its own MAC, so macRange and allowStaticMAC apply only to VFs (hostDevice.vf)"
// +kubebuilder:validation:XValidation:rule="!has(self.hostDevice) || ((!has(self.offloads) || self.offloads.size() == 0) && (!has(self.settings) || !self.settings.exists(s, s.name == 'txqueuelen')))",message="a hostDevice network may not offer offloads or txqueuelen: they stay with the NIC when it goes back to the node"
// +kubebuilder:validation:XValidation:rule="!has(self.defaultRoute) || !self.defaultRoute.allowed || (has(self.ipam) && has(self.ipam.gateways) && self.ipam.gateways.size() > 0)",message="defaultRoute.allowed needs ipam.gateways: the pod's default route goes via a gateway of the network"
// +kubebuilder:validation:XValidation:rule="!has(self.portSecurity) || !has(self.tunnel)",message="portSecurity applies to bridge, vlan, macvlan and ipvlan networks: a tunnel interface carries no frames of other pods to filter"
// +kubebuilder:validation:XValidation:rule="!has(self.tunnel) || !has(self.tunnel.wireguard) || (!has(self.macRange) && !(has(self.allowStaticMAC) && self.allowStaticMAC))",message="a wireguard tunnel has no MAC address: macRange and allowStaticMAC do not apply"
// +kubebuilder:validation:XValidation:rule="!has(self.settings) || !self.settings.exists(s, s.name == 'accept_ra') || (has(self.acceptRouterAdvertisements) && self.acceptRouterAdvertisements)",message="settings may offer accept_ra only on a network with acceptRouterAdvertisements: elsewhere podnet keeps router advertisements out"
// +kubebuilder:validation:XValidation:rule="!has(self.addressCheck) || !(has(self.tunnel) || has(self.ipvlan))",message="addressCheck applies to bridge, vlan and macvlan networks: a tunnel has no neighbours to ask, and ipvlan interfaces share their parent's MAC, so an answer from a sibling could not be told apart"
// +kubebuilder:validation:XValidation:rule="!has(self.addressCheck) || !has(self.addressCheck.gateway) || !self.addressCheck.gateway || (has(self.ipam) && has(self.ipam.gateways) && self.ipam.gateways.size() > 0)",message="addressCheck.gateway needs ipam.gateways: it is those gateways that must answer"
// +kubebuilder:validation:XValidation:rule="!has(self.vrf) || !has(self.policyFloor)",message="policyFloor cannot be set on a network with vrf: network policy is not enforced on interfaces in a VRF (such an interface would be kept down)"
type Network struct {
	// Name is what tenants ask for. A DNS label of at most 32 characters.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// Bridge attaches the pod with a veth pair whose host end is a port of a
	// Linux bridge on the node. The bridge is created when first needed and
	// removed when its last podnet port goes, unless it existed before. A
	// bridge network is node-local unless it spans nodes through bridge.vxlan
	// or bridge.uplink.
	// +optional
	Bridge *BridgeNetwork `json:"bridge,omitempty"`

	// Macvlan gives the pod a macvlan interface on a host parent link.
	// +optional
	Macvlan *MacvlanNetwork `json:"macvlan,omitempty"`

	// IPVlan gives the pod an ipvlan interface on a host parent link.
	// +optional
	IPVlan *IPVlanNetwork `json:"ipvlan,omitempty"`

	// VLAN attaches the pod to one VLAN of a host parent link (master). On
	// each node the pods of that link and VLAN share one 802.1Q
	// subinterface of the parent, which podnet creates as the uplink of a
	// bridge of its own; each pod gets a veth pair whose node end is a port
	// of that bridge. Subinterface and bridge go with the node's last pod
	// on that VLAN. A subinterface of that VLAN that podnet did not create
	// is refused, never taken over.
	// +optional
	VLAN *VLANNetwork `json:"vlan,omitempty"`

	// Tunnel gives the pod a point-to-point tunnel interface (a
	// WireGuard device or a VXLAN device) to one of the endpoints
	// outside the cluster listed here. Its UDP socket stays on the node.
	// +optional
	Tunnel *TunnelNetwork `json:"tunnel,omitempty"`

	// HostDevice moves one of the node's NICs, whole, into the pod, under
	// the interface's name: the agent picks a free one that the selector
	// matches on the pod's node. One pod has a NIC at a time. It goes back
	// to the node, with its name, MTU and up or down state, when the pod
	// goes or loses the grant. The pod is placed on a node that has such
	// a NIC. A NIC that carries an address (but an IPv6 link-local one),
	// is a port or parent of another link, or is podnet's own is never
	// taken. With dra, each free NIC is a device of the node's
	// ResourceSlice instead, the scheduler picks it, and pods ask for the
	// network only through ResourceClaims.
	// +optional
	HostDevice *HostDeviceNetwork `json:"hostDevice,omitempty"`

	// NodeSelector limits the nodes that may carry this network, by node
	// labels. The webhook requires it of every pod that gets the network
	// (a required node affinity), beside what the network needs of a
	// node's links and kernel, which the agents label their nodes with
	// (carry.podnet.io/...). Absent: any node that has what the network
	// needs.
	// +optional
	NodeSelector *NetworkNodeSelector `json:"nodeSelector,omitempty"`

	// MTU limits the MTU tenants may ask for, and sets the default.
	// +optional
	MTU *MTURange `json:"mtu,omitempty"`

	// IPAM says where the interface's addresses come from. Absent: the
	// interface gets no address (layer 2 only).
	// +optional
	IPAM *IPAM `json:"ipam,omitempty"`

	// Routes limits the routes tenants may add through this interface.
	// Absent: no routes may be asked for.
	// +optional
	Routes *RoutePolicy `json:"routes,omitempty"`

	// AllowStaticMAC lets tenants choose the interface's MAC address (a
	// unicast address). Otherwise the kernel chooses one.
	// +optional
	AllowStaticMAC bool `json:"allowStaticMAC,omitempty"`

	// MACRange, when set, gives every interface of the network a MAC of
	// the range, unique across the cluster; a static MAC must lie in it.
	// +optional
	MACRange *MACRange `json:"macRange,omitempty"`

	// AllowRawSockets lets the containers of pods that get this network
	// keep NET_RAW, which container runtimes grant by default. With it a
	// process can open raw and packet sockets: tools such as busybox ping
	// and arping work, and so does sending frames with any source MAC and
	// IP (spoofing the network's other pods). Otherwise podnet drops
	// NET_RAW from every container and init container of the pod. A pod
	// keeps NET_RAW only when every podnet network it gets allows it.
	// +optional
	AllowRawSockets bool `json:"allowRawSockets,omitempty"`

	// PortSecurity says what a pod's interface may send: at its port on
	// the node's bridge (bridge and vlan networks), or at the pod link's
	// own egress, filtered in the pod's netns (macvlan and ipvlan
	// networks). Absent: port security is on, and the port forwards only
	// frames from the pod interface's own MAC; ARP
	// only with that MAC and the pod's own IPv4 addresses (or 0.0.0.0, a
	// probe); IPv4 only from its addresses; IPv6 only from its addresses,
	// its link-local addresses, or :: (duplicate address detection); and
	// neighbour discovery only for its own addresses and MAC. Router
	// advertisements, ICMP and ICMPv6 redirects and DHCP / DHCPv6 server
	// answers are dropped unless portSecurity.allowRouters is set.
	// VLAN-tagged frames are dropped. It holds whether or not
	// allowRawSockets is set.
	// +optional
	PortSecurity *PortSecurityPolicy `json:"portSecurity,omitempty"`

	// AcceptRouterAdvertisements lets the pod interfaces of this network
	// take IPv6 router advertisements and redirects: addresses by SLAAC,
	// default routes and the MTU they announce. Otherwise podnet sets
	// accept_ra and accept_redirects (IPv6 and IPv4) to 0 on every pod
	// interface it makes, so that no frame on the network moves the pod's
	// routes or MTU.
	// +optional
	AcceptRouterAdvertisements bool `json:"acceptRouterAdvertisements,omitempty"`

	// Settings lists the per-interface kernel settings tenants may choose
	// for this network's interfaces ("settings" in the request), each
	// with the values allowed. The agent writes them in the pod's netns
	// before the interface goes up. A setting not asked for keeps a new
	// link's value, and asking for that value is always allowed. When the
	// admin narrows a range, running interfaces come into it; when a
	// setting is no longer listed, they go back to that value. Absent:
	// none may be chosen.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	Settings []SettingRange `json:"settings,omitempty"`

	// Offloads lists the ethtool features of this network's interfaces
	// that tenants may turn on or off ("offloads" in the request), by the
	// kernel's names as `ethtool -k` prints them (rx-gro,
	// tx-checksum-ip-generic, tx-tcp-segmentation, ...); ethtool's short
	// aliases (gro, tso) are not feature names. A feature the device fixes
	// cannot be changed, and the attach says so. A running interface that
	// changed a feature this list no longer names is detached: the
	// device's own default is not known afterwards. Absent: none.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=32
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]+([-_][a-z0-9]+)*$`
	Offloads []string `json:"offloads,omitempty"`

	// AddressCheck makes the agent check a pod interface's addresses on
	// the wire before it reports the interface ready, for networks where
	// podnet is not the only one handing out addresses (an uplink or
	// macvlan segment shared with hosts and routers, static addresses).
	// A failed check keeps the interface down, the pod's app held, and
	// says why in an Event; the next attempt checks again. Absent: no
	// check.
	// +optional
	AddressCheck *AddressCheck `json:"addressCheck,omitempty"`

	// DefaultRoute lets tenants move the pod's default route to this network
	// with Multus' "default-route" key: for each family the tenant names a
	// gateway of (one of ipam.gateways), the pod's default route goes via
	// that gateway through this interface instead of eth0, and eth0's comes
	// back when the interface goes. Absent: "default-route" is refused.
	// +optional
	DefaultRoute *DefaultRoutePolicy `json:"defaultRoute,omitempty"`

	// VRF lets tenants put this network's interfaces into a VRF inside the
	// pod, with a routing table id from vrf.tables. Absent: a request
	// naming a VRF is refused.
	// +optional
	VRF *VRFPolicy `json:"vrf,omitempty"`

	// DRA offers this network through Dynamic Resource Allocation as
	// well: each node that carries it publishes devices of driver
	// podnet.io in a ResourceSlice, and the controller keeps a
	// DeviceClass "<network>.<profile>" that a ResourceClaim names.
	// Absent: the network is asked for only by annotation. A hostDevice
	// network publishes one device per free NIC it selects (not
	// attachmentsPerNode), and is then asked for only by claim: the
	// scheduler alone hands out its NICs.
	// +optional
	DRA *DRAOffer `json:"dra,omitempty"`

	// PolicyFloor isolates the network's pods, in each direction it sets,
	// before any MultiNetworkPolicy exists and under every one: a pod
	// talks through the network only with the peers the floor allows, and
	// a tenant's policy can narrow that, never widen it. It is enforced
	// inside the pod's network namespace, which the pod cannot change
	// (no NET_ADMIN); replies to allowed traffic and IPv6 neighbour and
	// router discovery always pass. Absent: tenants' MultiNetworkPolicies
	// alone decide.
	// +optional
	PolicyFloor *PolicyFloor `json:"policyFloor,omitempty"`
}

// PolicyFloor is the admin's isolation of a network, per direction.
// +kubebuilder:validation:XValidation:rule="has(self.ingress) || has(self.egress)",message="policyFloor must set ingress, egress or both"
type PolicyFloor struct {
	// Ingress is whom the network's pods may be reached from through it.
	// Absent: ingress is not isolated by the floor.
	// +optional
	Ingress *PolicyScope `json:"ingress,omitempty"`

	// Egress is whom the network's pods may send to through it. Absent:
	// egress is not isolated by the floor.
	// +optional
	Egress *PolicyScope `json:"egress,omitempty"`
}

// PolicyScope is whom a pod may talk with in one direction, on every
// port: the network's pods of its own namespace, those of namespaces
// that share a label value with its namespace, and address ranges. An
// empty scope allows nothing.
type PolicyScope struct {
	// SameNamespace allows the network's pods in the pod's own namespace.
	// +optional
	SameNamespace bool `json:"sameNamespace,omitempty"`

	// SameLabel allows the network's pods whose namespace has the same
	// value of this namespace label as the pod's namespace (a tenant
	// label, e.g. "tenant"). A namespace without the label shares it with
	// none. Tenants must not be able to set the label on their own
	// namespaces.
	// +optional
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:XValidation:rule="self.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$')",message="sameLabel must be a label key, e.g. tenant or example.com/tenant"
	SameLabel string `json:"sameLabel,omitempty"`

	// CIDRs allow addresses, e.g. ["10.9.0.0/24"] for a router or a
	// service outside the cluster.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=43
	// +kubebuilder:validation:XValidation:rule="self.all(c, isCIDR(c))",message="policyFloor cidrs must be CIDRs, e.g. 10.9.0.0/24 or fd00::/64"
	CIDRs []string `json:"cidrs,omitempty"`
}

// SettingRange lets tenants choose one per-interface setting within
// min–max (inclusive), and within what the kernel takes for it.
// +kubebuilder:validation:XValidation:rule="self.min <= self.max",message="min must not be above max"
type SettingRange struct {
	// Name of the setting: the interface's IPv4 sysctls arp_announce
	// (0–2), arp_ignore (0–8), arp_notify (0–1), rp_filter (0–2; the
	// kernel applies the higher of the interface's and conf/all's); its
	// IPv6 sysctls accept_ra (0–2, only with acceptRouterAdvertisements),
	// accept_dad (0–2), dad_transmits (0–10), addr_gen_mode (0–3),
	// disable_ipv6 (0–1, not on an interface with IPv6 addresses); or
	// txqueuelen, the link's transmit queue length (0–1048576).
	// +required
	// +kubebuilder:validation:Enum=arp_announce;arp_ignore;arp_notify;rp_filter;accept_ra;accept_dad;dad_transmits;addr_gen_mode;disable_ipv6;txqueuelen
	Name string `json:"name"`
	// Min is the lowest value tenants may ask for.
	// +required
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1048576
	Min int64 `json:"min"`
	// Max is the highest value tenants may ask for.
	// +required
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1048576
	Max int64 `json:"max"`
}

// AddressCheck says what the agent checks on the wire before a pod
// interface is ready.
type AddressCheck struct {
	// Duplicates probes each of the interface's addresses: IPv4 with ARP
	// probes (RFC 5227, sender 0.0.0.0, so no neighbour's cache changes),
	// IPv6 with duplicate address detection's neighbour solicitations
	// (sender ::). An answer from another MAC, or another host probing
	// for the same address, is a conflict: the Event names the address
	// and the MAC. An IPv4 address that passed is announced once
	// (gratuitous ARP), so neighbours forget a MAC that held it before.
	// +optional
	Duplicates bool `json:"duplicates,omitempty"`

	// Gateway requires each of ipam.gateways of a family the interface
	// has an address of to answer an ARP request or a neighbour
	// solicitation from the interface.
	// +optional
	Gateway bool `json:"gateway,omitempty"`
}

// PortSecurityPolicy relaxes the port security of a network's pods.
type PortSecurityPolicy struct {
	// Disabled turns port security off for this network: its pods' ports
	// forward frames with any source MAC and address, so a pod that keeps
	// NET_RAW (allowRawSockets) can pose as the network's other pods. For
	// networks whose pods run their own L2 or L3 functions (bridging,
	// routing, virtual IPs). Default false.
	// +optional
	Disabled bool `json:"disabled,omitempty"`

	// AllowRouters declares the network's pods its routers: their ports
	// forward IPv6 router advertisements, ICMP and ICMPv6 redirects and
	// DHCP / DHCPv6 server answers, which port security otherwise drops
	// (any pod could make itself the other pods' router). For networks
	// whose pods serve the others (a virtual router, a DHCP server); the
	// pods still send only from their own MAC and addresses. Default
	// false.
	// +optional
	AllowRouters bool `json:"allowRouters,omitempty"`
}

// DefaultRoutePolicy says whether a network may carry the pod's default
// route.
type DefaultRoutePolicy struct {
	// Allowed lets pods ask for the default route through this network.
	// +required
	Allowed bool `json:"allowed"`
}

// BridgeNetwork is a veth pair into a node bridge. Without vxlan or uplink
// the network is node-local; with one of them it spans nodes.
// +kubebuilder:validation:XValidation:rule="!(has(self.vxlan) && has(self.uplink))",message="set at most one of bridge.vxlan and bridge.uplink"
// +kubebuilder:validation:XValidation:rule="!has(self.vlan) || !(has(self.vxlan) || has(self.uplink))",message="bridge.vlan cannot be combined with bridge.vxlan or bridge.uplink: the spanning port would carry only the bridge's default VLAN"
type BridgeNetwork struct {
	// Name of the Linux bridge on the node.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=15
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9][-_.a-zA-Z0-9]*$`
	Name string `json:"name"`

	// VLAN, when set, makes the bridge VLAN-filtering and the pod's port an
	// access port with the chosen VLAN as PVID.
	// +optional
	VLAN *VLANPolicy `json:"vlan,omitempty"`

	// VXLAN makes the network span nodes through a VXLAN overlay: on each
	// node with a pod of the network, one VXLAN device is a port of the
	// bridge, with one flood entry per peer node (a broadcast is sent once
	// to every peer). The bridge must be one podnet creates. Pod MTU
	// defaults to underlayMTU minus the VXLAN overhead (50 bytes over IPv4,
	// 70 over IPv6), and a larger one is refused.
	// +optional
	VXLAN *VXLANSpan `json:"vxlan,omitempty"`

	// Uplink makes the network span nodes through a host interface that
	// the agent makes a port of the bridge (a dedicated NIC or a VLAN
	// subinterface of one). An interface that carries addresses (other
	// than IPv6 link-local) or the node's default route is refused, so
	// podnet never cuts a node off. It is released, not deleted, when the
	// bridge goes.
	// +optional
	Uplink *UplinkSpan `json:"uplink,omitempty"`
}

// VXLANSpan is the VXLAN overlay of a bridge network.
type VXLANSpan struct {
	// VNI is the VXLAN network identifier. One VNI carries one bridge
	// across all profiles: a VNI used for two bridges is reported in the
	// profiles' status and refused at admission.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=16777215
	VNI int32 `json:"vni"`

	// Port is the UDP destination port.
	// +optional
	// +kubebuilder:default=4789
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port,omitempty"`

	// Local says which node address sources the overlay. Absent: the Node's
	// InternalIP of the underlay's family. The underlay is IPv6 only when
	// local.address is an IPv6 address.
	// +optional
	Local *VXLANLocal `json:"local,omitempty"`

	// UnderlayMTU is the MTU of the node network that carries the overlay.
	// +optional
	// +kubebuilder:default=1500
	// +kubebuilder:validation:Minimum=1280
	// +kubebuilder:validation:Maximum=65535
	UnderlayMTU int32 `json:"underlayMTU,omitempty"`

	// Underlay declares where the overlay's nodes are. A node is a peer
	// (flooded to, and allowed to send the VNI's packets) only when its
	// underlay address lies in underlay.cidrs; on a node whose own address
	// lies outside, pods of the network are not attached. Absent: any
	// node address may be a peer. Loopback, unspecified, multicast and
	// link-local addresses are never peers, declared or not.
	// +optional
	Underlay *VXLANUnderlay `json:"underlay,omitempty"`
}

// VXLANUnderlay is the node network an overlay runs over.
type VXLANUnderlay struct {
	// CIDRs are the networks the nodes' underlay addresses (their
	// InternalIP of the underlay's family, or local.address) must lie in,
	// e.g. ["10.0.0.0/16"]. Each must be a network of unicast addresses:
	// loopback, link-local, multicast and 0.0.0.0/0 or ::/0 are refused.
	// +required
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=43
	// +kubebuilder:validation:XValidation:rule="self.all(c, isCIDR(c) && cidr(c).ip().isGlobalUnicast())",message="underlay.cidrs must be CIDRs of unicast addresses, e.g. 10.0.0.0/16 (not loopback, link-local, multicast, 0.0.0.0/0 or ::/0)"
	CIDRs []string `json:"cidrs"`
}

// VXLANLocal names the node side of the overlay: exactly one of an
// interface or an address.
// +kubebuilder:validation:XValidation:rule="has(self.interface) != has(self.address)",message="set exactly one of local.interface and local.address"
// +kubebuilder:validation:XValidation:rule="!has(self.address) || isIP(self.address)",message="local.address must be an IP address, e.g. 192.0.2.10"
type VXLANLocal struct {
	// Interface is the node interface the overlay is bound to; its address
	// of the underlay's family is the source.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=15
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9][-_.a-zA-Z0-9]*$`
	Interface string `json:"interface,omitempty"`

	// Address is the overlay's source address, and its family the
	// underlay's. A node that does not own it cannot send: on clusters of
	// several nodes name an interface instead.
	// +optional
	// +kubebuilder:validation:MaxLength=39
	Address string `json:"address,omitempty"`
}

// UplinkSpan is the host interface that makes a bridge network span nodes.
type UplinkSpan struct {
	// Interface is the host interface made a port of the bridge.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=15
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9][-_.a-zA-Z0-9]*$`
	Interface string `json:"interface"`
}

// HostDeviceNetwork selects node NICs. A NIC matches when it matches every
// list that is set, and a list when it matches one of its entries.
// +kubebuilder:validation:XValidation:rule="has(self.names) || has(self.drivers) || has(self.pciAddresses)",message="select NICs by at least one of names, drivers and pciAddresses"
type HostDeviceNetwork struct {
	// Names are shell patterns of node link names, e.g. ens3f* or
	// eth[2-3].
	// +optional
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=64
	// +kubebuilder:validation:items:Pattern=`^[-_.a-zA-Z0-9*?\[\]^!]+$`
	Names []string `json:"names,omitempty"`

	// Drivers are kernel driver names, as `ethtool -i` reports them,
	// e.g. ixgbe.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=32
	// +kubebuilder:validation:items:Pattern=`^[-_.a-zA-Z0-9]+$`
	Drivers []string `json:"drivers,omitempty"`

	// PCIAddresses are the NICs' PCI addresses, as `ethtool -i` reports
	// them (bus-info), e.g. 0000:3b:00.1.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:Pattern=`^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$`
	PCIAddresses []string `json:"pciAddresses,omitempty"`

	// VF, when set, hands out the SR-IOV virtual functions of the NICs
	// the lists select (their physical functions) instead of the NICs
	// themselves: a VF whose PF matches is moved whole into the pod, and
	// the agent sets its MAC, VLAN, spoof check and trust on the PF, from
	// the approval, before the move. The pod can change none of them.
	// +optional
	VF *VFPolicy `json:"vf,omitempty"`
}

// VFPolicy bounds what a VF is given. The PF enforces it: the pod sees
// only the VF.
type VFPolicy struct {
	// VLAN, when set, makes the VF an access port of the chosen VLAN: the
	// NIC tags what the VF sends and passes it only that VLAN's frames.
	// Absent: the VF is untagged and no tenant may ask for a VLAN.
	// +optional
	VLAN *VLANPolicy `json:"vlan,omitempty"`

	// SpoofCheck makes the NIC drop frames the VF sends from a MAC other
	// than its own.
	// +optional
	// +kubebuilder:default=true
	SpoofCheck *bool `json:"spoofCheck,omitempty"`

	// Trust lets the VF change its own MAC and receive all multicast or
	// all frames (promiscuous), where the NIC allows it.
	// +optional
	Trust bool `json:"trust,omitempty"`
}

// MacvlanNetwork is a macvlan interface on a host parent link.
type MacvlanNetwork struct {
	// Master is the host parent link, for example eth1.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=15
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9][-_.a-zA-Z0-9]*$`
	Master string `json:"master"`

	// Mode is the macvlan mode.
	// +optional
	// +kubebuilder:default=bridge
	// +kubebuilder:validation:Enum=bridge;private;vepa;passthru
	Mode string `json:"mode,omitempty"`
}

// IPVlanNetwork is an ipvlan interface on a host parent link.
type IPVlanNetwork struct {
	// Master is the host parent link, for example eth1.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=15
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9][-_.a-zA-Z0-9]*$`
	Master string `json:"master"`

	// Mode is the ipvlan mode.
	// +optional
	// +kubebuilder:default=l2
	// +kubebuilder:validation:Enum=l2;l3;l3s
	Mode string `json:"mode,omitempty"`
}

// VLANNetwork is one VLAN of a host link: the pods of a node share its
// subinterface through a bridge, each with a veth.
type VLANNetwork struct {
	// Master is the host link that carries the tagged traffic.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=15
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9][-_.a-zA-Z0-9]*$`
	Master string `json:"master"`

	// VLAN says which VLAN IDs tenants may ask for, and the default.
	// +required
	VLAN VLANPolicy `json:"vlan"`
}

// VLANPolicy limits VLAN IDs.
// +kubebuilder:validation:XValidation:rule="has(self.default) || (has(self.allowed) && self.allowed.size() > 0)",message="set a default VLAN or allowed VLANs"
// +kubebuilder:validation:XValidation:rule="!has(self.allowed) || self.allowed.all(r, r.split('-').all(x, int(x) >= 1 && int(x) <= 4094) && (r.split('-').size() == 1 || int(r.split('-')[0]) <= int(r.split('-')[1])))",message="allowed VLANs must be IDs or ascending ranges within 1-4094, e.g. 120 or 100-199"
type VLANPolicy struct {
	// Default is the VLAN used when the tenant does not ask for one. It
	// may always be asked for, even when outside Allowed. Absent: tenants
	// must name a VLAN.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=4094
	Default *int32 `json:"default,omitempty"`

	// Allowed are the VLAN IDs tenants may ask for, as single IDs ("120") or
	// inclusive ranges ("100-199"), each within 1-4094.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:Pattern=`^[0-9]{1,4}(-[0-9]{1,4})?$`
	// +kubebuilder:validation:items:MaxLength=9
	Allowed []string `json:"allowed,omitempty"`
}

// MTURange limits an interface's MTU. A tenant may ask for any MTU from Min
// (576 when absent) to Max (65535 when absent); on the node, one above the
// parent link's MTU is refused for macvlan, ipvlan and vlan.
// +kubebuilder:validation:XValidation:rule="!has(self.min) || !has(self.max) || self.min <= self.max",message="min must not exceed max"
// +kubebuilder:validation:XValidation:rule="!has(self.default) || ((!has(self.min) || self.min <= self.default) && (!has(self.max) || self.default <= self.max))",message="default must lie within min and max"
type MTURange struct {
	// Default is the MTU when the tenant does not ask for one. Absent: the
	// kernel's default (the parent's MTU for macvlan, ipvlan and vlan).
	// +optional
	// +kubebuilder:validation:Minimum=576
	// +kubebuilder:validation:Maximum=65535
	Default *int32 `json:"default,omitempty"`

	// Min is the smallest MTU tenants may ask for.
	// +optional
	// +kubebuilder:validation:Minimum=576
	// +kubebuilder:validation:Maximum=65535
	Min *int32 `json:"min,omitempty"`

	// Max is the largest MTU tenants may ask for.
	// +optional
	// +kubebuilder:validation:Minimum=576
	// +kubebuilder:validation:Maximum=65535
	Max *int32 `json:"max,omitempty"`
}

// IPAM is cluster-wide address management for one network: every address
// is reserved by an IPClaim object, so no address is ever given twice. The
// network, broadcast (IPv4) and gateway addresses of a pool are never given
// to pods.
// +kubebuilder:validation:XValidation:rule="self.pools.all(p, isCIDR(p))",message="pools must be CIDRs, e.g. 192.168.100.0/24 or fd00:100::/64"
// +kubebuilder:validation:XValidation:rule="!self.pools.all(p, isCIDR(p)) || self.pools.all(p, cidr(p) == cidr(p).masked())",message="pools must be network addresses without host bits, e.g. 192.168.100.0/24 (not 192.168.100.1/24)"
// +kubebuilder:validation:XValidation:rule="!self.pools.all(p, isCIDR(p)) || self.pools.size() < 2 || cidr(self.pools[0]).ip().family() != cidr(self.pools[1]).ip().family()",message="at most one IPv4 and one IPv6 pool"
// +kubebuilder:validation:XValidation:rule="!has(self.gateways) || self.gateways.all(g, isIP(g))",message="gateways must be IP addresses, e.g. 192.168.100.1"
// +kubebuilder:validation:XValidation:rule="!has(self.gateways) || !self.gateways.all(g, isIP(g)) || !self.pools.all(p, isCIDR(p)) || self.gateways.all(g, self.pools.exists(p, cidr(p).containsIP(g)))",message="each gateway must lie inside one of the pools"
// +kubebuilder:validation:XValidation:rule="!has(self.gateways) || !self.gateways.all(g, isIP(g)) || self.gateways.size() < 2 || ip(self.gateways[0]).family() != ip(self.gateways[1]).family()",message="at most one gateway per IP family"
// +kubebuilder:validation:XValidation:rule="!has(self.maxAddressesPerNamespace) || !has(self.unlimitedAddressesPerNamespace) || !self.unlimitedAddressesPerNamespace",message="set at most one of maxAddressesPerNamespace and unlimitedAddressesPerNamespace"
type IPAM struct {
	// Pools are the CIDRs addresses come from: at most one IPv4 and one IPv6
	// pool gives a dual-stack interface one address of each family.
	// +required
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=2
	// +kubebuilder:validation:items:MaxLength=43
	Pools []string `json:"pools"`

	// Gateways are the networks' gateway addresses, at most one per family,
	// each inside a pool. They are never allocated to pods and are the
	// default next hop of routes tenants ask for.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=2
	// +kubebuilder:validation:items:MaxLength=39
	Gateways []string `json:"gateways,omitempty"`

	// AllowStatic lets tenants ask for specific addresses inside the pools.
	// They are reserved through the same IPClaims, so a taken address is an
	// error on the pod, never a duplicate.
	// +optional
	AllowStatic bool `json:"allowStatic,omitempty"`

	// MaxAddressesPerNamespace caps how many addresses of each IP family
	// the pods of one namespace may hold at once in the network's address
	// space, so that one tenant cannot drain addresses it shares with
	// others. The address space is the layer-2 domain: the bridge (by
	// name, across nodes, whatever spans it), or the master link of
	// macvlan, ipvlan and vlan networks; VLANs do not split it. The quota
	// is per address space, not per profile: every network of every
	// profile on that bridge or link counts against one quota per
	// namespace, and the strictest cap among them applies to all of them.
	//
	// Absent (and unlimitedAddressesPerNamespace not set): when more than
	// one namespace can draw from the space (some profile offering it does
	// not select exactly one namespace by its kubernetes.io/metadata.name
	// label, or the profiles offering it select different ones), the cap is
	// half of the usable addresses of the network's smallest pool (at least
	// 1, at most 4096); otherwise no cap.
	//
	// Every address (allocated or static) also holds one of the
	// namespace's numbered quota slots of the space, an IPClaim created
	// before the address is taken, so the cap holds under any number of
	// concurrent allocations. A pod asking for more addresses than the cap
	// is refused at admission; a pod that would go over because other pods
	// of its namespace hold the slots waits, with the condition reason
	// QuotaExceeded, until one is freed.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=4096
	MaxAddressesPerNamespace *int32 `json:"maxAddressesPerNamespace,omitempty"`

	// UnlimitedAddressesPerNamespace, when true, says explicitly that this
	// network sets no cap per namespace, not even the default of a shared
	// address space (another profile's network on the same bridge or link
	// may still set one, and the strictest applies). Cannot be combined with
	// maxAddressesPerNamespace.
	// +optional
	UnlimitedAddressesPerNamespace bool `json:"unlimitedAddressesPerNamespace,omitempty"`

	// Persistent lets the pods of a StatefulSet keep their addresses (and
	// MAC, with a macRange) when they are deleted and recreated. Absent:
	// a pod's addresses are released with the pod.
	// +optional
	Persistent *PersistentIPAM `json:"persistent,omitempty"`
}

// RoutePolicy limits the routes tenants may add.
// +kubebuilder:validation:XValidation:rule="self.allowed.all(c, isCIDR(c))",message="routes.allowed must be CIDRs, e.g. 10.50.0.0/16"
// +kubebuilder:validation:XValidation:rule="!self.allowed.all(c, isCIDR(c)) || self.allowed.all(c, cidr(c) == cidr(c).masked())",message="routes.allowed must be network addresses without host bits, e.g. 10.50.0.0/16"
type RoutePolicy struct {
	// Allowed are CIDRs; a requested route's destination must lie inside one
	// of them (0.0.0.0/0 or ::/0 allows any route of that family). A route
	// without a gateway goes through the network's gateway of its family,
	// or is on-link when there is none; a gateway a tenant names must lie
	// inside one of the network's pools.
	// +required
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=43
	Allowed []string `json:"allowed"`
}

// PrimaryInterface limits the tuning of the pod's primary interface.
type PrimaryInterface struct {
	// MTU limits the MTU tenants may set on the primary interface.
	// +required
	MTU MTURange `json:"mtu"`
}

// NetworkProfileStatus is the observed state of a profile, written by
// podnet-controller when it changes (never on a timer).
type NetworkProfileStatus struct {
	// ObservedGeneration is the spec generation the status was computed
	// from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions are observed state for tools and controllers: Ready is
	// False, with the reason and the offending fields in its message, when
	// the spec is invalid or clashes with another profile (an address pool
	// overlapping another network's, a network name offered differently).
	// Admission does not depend on them: a conflict is reported on every
	// pod that asks for the conflicting network.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Networks lists, per network with address pools, how many addresses
	// of each pool are claimed and how many are still free. Claims count
	// per address space: two network names on one bridge or master link
	// each show the addresses of both.
	// +optional
	// +listType=map
	// +listMapKey=name
	Networks []NetworkUsage `json:"networks,omitempty"`

	// AddressesInUse is the sum of the pools' addresses in use.
	// +optional
	AddressesInUse int64 `json:"addressesInUse,omitempty"`

	// Spanning lists how each network that spans nodes does so, in spec
	// order: "overlay=vxlan/1001 fabric=uplink/eth2" (empty when every
	// network is node-local).
	// +optional
	Spanning string `json:"spanning,omitempty"`

	// LeastAvailable is the number of free addresses of the fullest pool
	// (0 when a pool is exhausted; absent when no network has pools), so
	// that a pool near exhaustion shows in `kubectl get networkprofiles`.
	// +optional
	LeastAvailable *int64 `json:"leastAvailable,omitempty"`
}

// NetworkUsage is the address usage of one network.
type NetworkUsage struct {
	// Name of the network.
	// +required
	Name string `json:"name"`
	// Pools of the network, in the profile's order.
	// +optional
	// +listType=atomic
	Pools []PoolUsage `json:"pools,omitempty"`
}

// PoolUsage is the address usage of one pool.
type PoolUsage struct {
	// Pool is the CIDR as the profile writes it.
	// +required
	Pool string `json:"pool"`
	// InUse is how many addresses of the pool are claimed (IPClaims).
	// +required
	InUse int64 `json:"inUse"`
	// Available is how many usable addresses are not claimed (network,
	// broadcast and gateway addresses are not usable), capped at 2^62.
	// +required
	Available int64 `json:"available"`
}

// NetworkProfileList is a list of NetworkProfiles.
// +kubebuilder:object:root=true
type NetworkProfileList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NetworkProfile `json:"items"`
}
