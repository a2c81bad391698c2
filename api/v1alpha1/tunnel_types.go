package v1alpha1

// TunnelNetwork gives each pod of the network its own point-to-point
// tunnel interface to one endpoint outside the cluster, out of the
// endpoints the admin approves here. The tunnel's UDP socket stays in the
// node's network namespace, so the pod needs no capability; its packets
// leave the node by the node's routes (or tunnel.underlay, for VXLAN).
// +kubebuilder:validation:XValidation:rule="has(self.wireguard) != has(self.vxlan)",message="set exactly one of tunnel.wireguard and tunnel.vxlan"
// +kubebuilder:validation:XValidation:rule="!has(self.underlay) || has(self.vxlan)",message="tunnel.underlay applies to vxlan tunnels: a WireGuard device sends by the node's routes"
type TunnelNetwork struct {
	// WireGuard makes the tunnel a WireGuard device. The agent makes the
	// pod's key pair on the node; the private key stays in the kernel
	// device (never in the API), and the public key is published in the
	// pod's podnet.io/network-status entry for the interface, so the
	// tenant can register it with the far end. The tenant names the
	// peer's public key and endpoint in the request.
	// +optional
	WireGuard *WireGuardTunnel `json:"wireguard,omitempty"`

	// VXLAN makes the tunnel a VXLAN device with one fixed remote (the
	// tenant's endpoint), for peers that speak no WireGuard. The
	// endpoint's port is also the node's VXLAN port for the tunnel; the
	// node accepts packets on it for the tunnel's VNI from the endpoint
	// only. Not encrypted.
	// +optional
	VXLAN *VXLANTunnel `json:"vxlan,omitempty"`

	// Endpoints are the remote endpoints tenants may name, each a CIDR
	// and its UDP ports. A request naming any other address or port is
	// refused, and removing an endpoint detaches the running pods'
	// tunnels to it.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	Endpoints []TunnelEndpoint `json:"endpoints"`

	// Underlay says which node interface or address a VXLAN tunnel's
	// packets leave from: the admin's choice, never the tenant's. Absent:
	// the node's routes choose the source.
	// +optional
	Underlay *VXLANLocal `json:"underlay,omitempty"`
}

// WireGuardTunnel is a WireGuard tunnel. It has no settings of its own:
// the peer (public key, endpoint, allowed IPs) is the tenant's, within
// the tunnel's endpoints and the network's routes and pools.
type WireGuardTunnel struct{}

// VXLANTunnel is a point-to-point VXLAN tunnel.
// +kubebuilder:validation:XValidation:rule="has(self.vni) != (has(self.vnis) && self.vnis.size() > 0)",message="set exactly one of vxlan.vni and vxlan.vnis"
// +kubebuilder:validation:XValidation:rule="!has(self.vnis) || self.vnis.all(r, r.split('-').all(x, int(x) >= 1 && int(x) <= 16777215) && (r.split('-').size() == 1 || int(r.split('-')[0]) <= int(r.split('-')[1])))",message="vnis must be VNIs or ascending ranges within 1-16777215, e.g. 5000 or 5000-5999"
type VXLANTunnel struct {
	// VNI fixes the VXLAN network identifier of every tunnel of the
	// network.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=16777215
	VNI *int32 `json:"vni,omitempty"`

	// VNIs let the tenant choose the VNI (the request's "vni"), as
	// single VNIs ("5000") or inclusive ranges ("5000-5999").
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:Pattern=`^[0-9]{1,8}(-[0-9]{1,8})?$`
	// +kubebuilder:validation:items:MaxLength=17
	VNIs []string `json:"vnis,omitempty"`
}

// TunnelEndpoint is a set of remote endpoints: addresses of a CIDR and
// UDP ports.
// +kubebuilder:validation:XValidation:rule="isCIDR(self.cidr) && cidr(self.cidr) == cidr(self.cidr).masked()",message="cidr must be a network address in CIDR notation, e.g. 198.51.100.0/24 or 203.0.113.7/32"
// +kubebuilder:validation:XValidation:rule="self.ports.all(r, r.split('-').all(x, int(x) >= 1 && int(x) <= 65535) && (r.split('-').size() == 1 || int(r.split('-')[0]) <= int(r.split('-')[1])))",message="ports must be ports or ascending ranges within 1-65535, e.g. 51820 or 51820-51829"
type TunnelEndpoint struct {
	// CIDR holds the endpoint addresses, e.g. 203.0.113.7/32.
	// +required
	// +kubebuilder:validation:MaxLength=43
	CIDR string `json:"cidr"`

	// Ports are the UDP ports, as single ports ("51820") or inclusive
	// ranges ("51820-51829").
	// +required
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:Pattern=`^[0-9]{1,5}(-[0-9]{1,5})?$`
	// +kubebuilder:validation:items:MaxLength=11
	Ports []string `json:"ports"`
}

// ApprovedTunnel is the resolved tunnel of a wireguard or vxlan-tunnel
// interface.
type ApprovedTunnel struct {
	// Endpoint is the remote, "ip:port" ("[ip6]:port").
	Endpoint string `json:"endpoint"`
	// PeerPublicKey is the peer's WireGuard public key (base64).
	PeerPublicKey string `json:"peerPublicKey,omitempty"`
	// AllowedIPs are the WireGuard peer's allowed IPs, as CIDRs.
	AllowedIPs []string `json:"allowedIPs,omitempty"`
	// VNI is the VXLAN network identifier.
	VNI int32 `json:"vni,omitempty"`
	// LocalInterface is the node interface a VXLAN tunnel is bound to;
	// empty = none.
	LocalInterface string `json:"localInterface,omitempty"`
	// LocalAddress is a VXLAN tunnel's source address; empty = chosen by
	// the node's routes.
	LocalAddress string `json:"localAddress,omitempty"`
}

// TunnelStatus is the tunnel of a network-status entry, under the key
// "podnet.io/tunnel" (Multus' readers ignore it).
//
// +kubebuilder:object:generate=false
type TunnelStatus struct {
	// Kind is wireguard or vxlan-tunnel.
	Kind NetworkKind `json:"kind"`
	// Endpoint is the remote, "ip:port".
	Endpoint string `json:"endpoint,omitempty"`
	// PublicKey is the pod's WireGuard public key (base64), to register
	// with the peer. The private key never leaves the node's kernel.
	PublicKey string `json:"publicKey,omitempty"`
	// VNI of a VXLAN tunnel.
	VNI int32 `json:"vni,omitempty"`
}
