package dataplane

import (
	"net"
	"sync"
	"sync/atomic"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"podnet.io/podnet/pkg/portsecurity"
)

// Kind is the type of a secondary pod interface.
type Kind string

// The kinds of interface podnet creates.
const (
	// KindBridge is a veth pair whose node end is a port of a node bridge.
	KindBridge Kind = "bridge"
	// KindMacvlan is a macvlan on a node parent link, created in the pod.
	KindMacvlan Kind = "macvlan"
	// KindIPVlan is an ipvlan on a node parent link, created in the pod.
	KindIPVlan Kind = "ipvlan"
	// KindVLAN is one VLAN of a node NIC. The kernel allows one 802.1Q
	// subinterface per NIC and VLAN id, so the pods of a node share it: it
	// is the uplink of a podnet bridge for that NIC and VLAN, and each pod
	// gets a veth whose node end is a port of that bridge. Bridge and
	// uplink go with the last port.
	KindVLAN Kind = "vlan"
	// KindWireGuard is a WireGuard device in the pod with one peer
	// outside the cluster; its UDP socket stays on the node
	// (tunnel_linux.go).
	KindWireGuard Kind = "wireguard"
	// KindVXLANTunnel is a VXLAN device in the pod with one fixed remote
	// outside the cluster; its UDP socket stays on the node.
	KindVXLANTunnel Kind = "vxlan-tunnel"
	// KindHostDevice is a node NIC moved whole into the pod and given
	// back when the pod leaves (hostdevice.go).
	KindHostDevice Kind = "host-device"
)

// Interface is one desired secondary interface inside the pod.
type Interface struct {
	// Name inside the pod, e.g. "net1".
	Name string
	Kind Kind
	// Bridge is the node bridge of a KindBridge interface; it is created
	// (and marked as podnet's) when absent.
	Bridge string
	// VLAN is, for KindBridge, the port's PVID on a vlan_filtering bridge
	// (0 = untagged port of a plain bridge) and, for KindVLAN, the VLAN id
	// the uplink tags with.
	VLAN int
	// VXLAN, for KindBridge only, is the overlay port of the bridge that
	// makes the network span nodes (at most one of VXLAN and Uplink).
	VXLAN *VXLAN
	// Uplink, for KindBridge only, is the host interface made a port of
	// the bridge that makes the network span nodes. It must carry no
	// address (but IPv6 link-local) and not the node's default route.
	Uplink string
	// Master is the node parent link of macvlan, ipvlan and vlan interfaces.
	Master string
	// Mode is the macvlan mode (bridge|private|vepa|passthru, default
	// bridge) or the ipvlan mode (l2|l3|l3s, default l2).
	Mode string
	// MTU is 0 for the kernel default: 1500 for bridge kind, the parent's
	// MTU for macvlan, ipvlan and vlan.
	MTU int
	// MAC is nil for a kernel-chosen address, which is then kept as long as
	// the interface exists.
	MAC net.HardwareAddr
	// Addresses are the interface's IPv4 and IPv6 addresses with their
	// prefix length. The IPAM made them unique, so the kernel's DAD is
	// off; where others hand out addresses too, CheckDuplicates probes.
	Addresses []net.IPNet
	// Routes are routes inside the pod through this interface.
	Routes []Route
	// PortSecurityDisabled lets the node end of a bridge or vlan kind
	// interface forward frames with any source MAC and address. By default
	// it forwards only the pod link's own MAC and Addresses (and its IPv6
	// link-local addresses), through nftables rules written before the
	// port goes up (portsec_linux.go).
	PortSecurityDisabled bool
	// Router lets the port forward router advertisements, redirects and
	// DHCP server answers, which port security otherwise drops.
	Router bool
	// AcceptRA keeps the kernel's accept_ra and accept_redirects on the
	// pod link; false sets them to 0 before the link goes up
	// (sysctl_linux.go), so that no router advertisement or redirect on
	// the network moves the pod's routes, addresses or MTU.
	AcceptRA bool
	// Offloads turns ethtool features on (true) or off, by the kernel's
	// names; set before a new link goes up and kept so.
	Offloads map[string]bool
	// SLAAC: the interface takes an IPv6 address from the network's
	// router advertisements (AcceptRA must be set); Apply waits until it
	// has one past duplicate address detection, lets port security allow
	// it, and reports it (slaac_linux.go).
	SLAAC bool
	// Settings are per-interface kernel settings by their pkg/ifsettings
	// name, written before a new link goes up and kept so
	// (settings_linux.go).
	Settings map[string]int64
	// CheckDuplicates probes every address on the wire when the link
	// comes up or gets an address, before the interface counts as
	// applied; CheckGateways must each answer then (wirecheck_linux.go).
	// A failed check leaves the link down and the interface failed.
	CheckDuplicates bool
	CheckGateways   []net.IP
	// Tunnel is the far end of a wireguard or vxlan-tunnel interface.
	Tunnel *Tunnel
	// Devices selects the node NICs a host-device interface may take;
	// the planner picks a free one and names it in Device.
	Devices *DeviceSelector
	Device  string
	// Allocated, when set, is the one node NIC (by its node name) a
	// host-device interface may take: the scheduler allocated it through
	// DRA. It must still be free and match Devices; no other is picked.
	Allocated string
	// VF, set with a Devices selector of VFs, is what the VF is given on
	// its PF beside MAC and VLAN (the VF's access VLAN, 0 = untagged).
	VF *VFSettings
	// DefaultGateways, one per family at most, make this interface carry
	// the pod's default route of that family instead of eth0
	// (defaultroute_linux.go).
	DefaultGateways []net.IP
	// VRF, when set, is the VRF device inside the pod the interface is
	// enslaved to; its Routes then live in the VRF's table (vrf.go).
	VRF *VRF
	// PolicyIn and PolicyOut are the interface's network policy: what
	// may reach the pod through it and what the pod may send through it.
	// A direction not Isolated passes everything. It is written into the
	// pod's netns, keyed by the link's name there, before any link of the
	// Apply goes up (policy_linux.go).
	PolicyIn, PolicyOut portsecurity.PolicyDirection
}

// VRF is a VRF device (an l3mdev of kind vrf) inside the pod. podnet
// creates it (marked as its own) when an interface first names it and
// deletes it when the last one leaves; a link of that name that podnet did
// not create is never taken over.
type VRF struct {
	// Name of the VRF device.
	Name string
	// Table is its routing table id: never 0 nor the kernel's 252-255.
	Table uint32
}

// VXLAN is the overlay of a bridge network: one VXLAN device per node and
// bridge, a port of the bridge, learning on, with one all-zeros FDB entry
// per peer (head-end replication: a broadcast goes once to every peer).
type VXLAN struct {
	// VNI is the VXLAN network identifier (1-16777215).
	VNI int
	// Port is the UDP destination port (0 = 4789).
	Port int
	// Local is the underlay source address (resolved by the agent); nil
	// lets the kernel choose by route (IPv4 underlay only).
	Local net.IP
	// Dev is the optional underlay interface the device is bound to.
	Dev string
	// Peers are the remote VTEPs: one all-zeros FDB entry each. Apply adds
	// the missing ones when a pod joins the bridge; SyncPeers makes them
	// exact at any time.
	Peers []net.IP
}

// Route is a route inside the pod through one interface. A nil Gateway makes
// it a directly connected route.
type Route struct {
	Dst     net.IPNet
	Gateway net.IP
	// Table is the routing table (0 = main). The planner sets it from the
	// interface's VRF; callers leave it 0.
	Table uint32
}

// Pod is the desired secondary networking of one pod.
type Pod struct {
	// UID names the node objects (host link names and aliases).
	UID string
	// NetNS is the path of the pod's network namespace.
	NetNS string
	// PrimaryMTU is the MTU to give the pod's eth0 (0 = leave it alone).
	PrimaryMTU int
	// Interfaces are the secondary interfaces, in the order they are set up.
	Interfaces []Interface
}

// InterfaceStatus is what is in place for one interface, in the shape of
// Multus' network-status entries (interface, ips, mac, mtu).
type InterfaceStatus struct {
	Name string
	MAC  string
	MTU  int
	// IPs are the interface's addresses in CIDR notation; kernel-made
	// IPv6 link-local addresses are left out.
	IPs []string
	// PublicKey is a WireGuard interface's own public key (base64), read
	// from the device.
	PublicKey string
}

// Dataplane applies Pods on one node. The zero value works on the calling
// process' network namespace; it is safe for concurrent use by several
// goroutines working on different pods.
type Dataplane struct {
	// HostNetNS is the path of the node's network namespace; "" means the
	// namespace the process runs in. Tests pass a throwaway namespace.
	HostNetNS string
	// SysctlNet is where the node's /proc/sys/net is seen; ""
	// means DefaultSysctlNet. Pod links' sysctls are written under it
	// from a thread in the pod's netns (sysctl_linux.go).
	SysctlNet string
	// VFs finds the PF of a node NIC that is an SR-IOV VF; nil means
	// the kernel's sysfs (SysfsVFs(DefaultPCIDevices)). Tests name
	// stand-in links as VFs of an emulated PF.
	VFs VFLookup

	// bridgeMu serialises creating, joining and deleting podnet bridges, so
	// that one pod's last port leaving never deletes a bridge another pod
	// is joining.
	bridgeMu sync.Mutex
	// bridgesChanged counts the podnet bridges deleted or given VLAN
	// filtering, under bridgeMu: a session that read a bridge before the
	// count moved reads it again.
	bridgesChanged atomic.Uint64
	// known are the podnet bridges plans read, by name (knownbridge_linux.go).
	knownMu sync.Mutex
	known   map[string]knownBridge
	// devicesSeen: this Dataplane took a host device into a pod, or found
	// one in a pod; sweptDevices: its sweep looked for stranded ones once.
	// Only then does CollectGarbage dump every node link to find them.
	devicesSeen, sweptDevices atomic.Bool

	// portsMu: port rules are written and removed under its read lock;
	// removing the rules of ports that are gone holds it exclusively
	// (portsec_linux.go).
	portsMu sync.RWMutex

	hostMu sync.Mutex
	host   *netlink.Handle
	hostNS netns.NsHandle
	// hostRaw is a route socket in hostNS for the requests the netlink
	// library would split in several (veth_linux.go), opened and closed
	// with host.
	hostRaw rawSocket
	// nft is the port-security table's connection in hostNS, opened
	// with it and closed with it.
	nft portRulesConn

	// policies are what was written into each pod's policy table, by
	// pod UID (policy_linux.go); policyCalls counts the calls that reach
	// a pod's table (a connection each, and a transaction when anything
	// differs), which an Apply with unchanged policies makes none of.
	policyMu    sync.Mutex
	policies    map[string]*podPolicy
	policyCalls atomic.Uint64
}
