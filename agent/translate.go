package agent

import (
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/dataplane"
	"podnet.io/podnet/pkg/policy"
)

// planPod translates a verified approval, the addresses the IPAM holds
// for each interface and the node NIC a DRA allocation names for a host
// device interface (both by interface name) into the dataplane's desired
// state. It decides nothing the approval does not say.
func planPod(uid, netns string, a *v1alpha1.Approval, addrs map[string][]net.IPNet, allocated map[string]string) (dataplane.Pod, error) {
	p := dataplane.Pod{UID: uid, NetNS: netns, PrimaryMTU: int(a.PrimaryMTU)}
	for i, ai := range a.Interfaces {
		ifc, err := planInterface(ai, addrs[ai.Interface])
		if err != nil {
			return dataplane.Pod{}, fmt.Errorf("approval interfaces[%d] (%q): %w", i, ai.Interface, err)
		}
		ifc.Allocated = allocated[ai.Interface]
		p.Interfaces = append(p.Interfaces, ifc)
	}
	return p, nil
}

func planInterface(ai v1alpha1.ApprovedInterface, addrs []net.IPNet) (dataplane.Interface, error) {
	ifc := dataplane.Interface{
		Name:      ai.Interface,
		Kind:      dataplane.Kind(ai.Kind),
		Bridge:    ai.Bridge,
		Uplink:    ai.Uplink,
		VLAN:      int(ai.VLAN),
		Master:    ai.Master,
		Mode:      ai.Mode,
		MTU:       int(ai.MTU),
		Addresses: addrs,

		PortSecurityDisabled: ai.PortSecurityDisabled,
		Router:               ai.Router,
		AcceptRA:             ai.AcceptRA,
	}
	if vx := ai.VXLAN; vx != nil {
		ifc.VXLAN = &dataplane.VXLAN{VNI: int(vx.VNI), Port: int(vx.Port), Dev: vx.LocalInterface}
		if vx.LocalAddress != "" {
			if ifc.VXLAN.Local = net.ParseIP(vx.LocalAddress); ifc.VXLAN.Local == nil {
				return ifc, fmt.Errorf("vxlan.localAddress %q: not an IP address", vx.LocalAddress)
			}
		}
	}
	tunnel, err := planTunnel(ai.Tunnel)
	if err != nil {
		return ifc, err
	}
	ifc.Tunnel = tunnel
	if ai.MAC != "" {
		mac, err := net.ParseMAC(ai.MAC)
		if err != nil {
			return ifc, fmt.Errorf("mac %q: %w", ai.MAC, err)
		}
		ifc.MAC = mac
	}
	for j, r := range ai.Routes {
		_, dst, err := net.ParseCIDR(r.Dst)
		if err != nil {
			return ifc, fmt.Errorf("routes[%d].dst %q: %w", j, r.Dst, err)
		}
		route := dataplane.Route{Dst: *dst}
		if r.Gateway != "" {
			if route.Gateway = net.ParseIP(r.Gateway); route.Gateway == nil {
				return ifc, fmt.Errorf("routes[%d].gateway %q: not an IP address", j, r.Gateway)
			}
		}
		ifc.Routes = append(ifc.Routes, route)
	}
	for j, g := range ai.DefaultRoute {
		gw := net.ParseIP(g)
		if gw == nil {
			return ifc, fmt.Errorf("defaultRoute[%d] %q: not an IP address", j, g)
		}
		if v4 := gw.To4(); v4 != nil {
			gw = v4
		}
		ifc.DefaultGateways = append(ifc.DefaultGateways, gw)
	}
	if v := ai.VRF; v != nil {
		ifc.VRF = &dataplane.VRF{Name: v.Name, Table: v.Table}
	}
	if d := ai.Devices; d != nil {
		sel := policy.ApprovedSelector(d)
		ifc.Devices = &sel
		if d.VF != nil {
			ifc.VF = &dataplane.VFSettings{SpoofCheck: d.VF.SpoofCheck, Trust: d.VF.Trust}
		}
	}
	ifc.Settings = maps.Clone(ai.Settings)
	ifc.SLAAC = ai.SLAAC
	ifc.Offloads = maps.Clone(ai.Offloads)
	ifc.CheckDuplicates = ai.CheckDuplicates
	if ai.CheckGateway && ai.IPAM != nil {
		ifc.CheckGateways, err = gatewaysToAsk(ai.IPAM.Gateways, addrs)
	}
	return ifc, err
}

// gatewaysToAsk are the network's gateways of the families the interface
// has an address of: only those can be asked from it.
func gatewaysToAsk(gateways []string, addrs []net.IPNet) ([]net.IP, error) {
	var out []net.IP
	for j, g := range gateways {
		ip := net.ParseIP(g)
		if ip == nil {
			return nil, fmt.Errorf("ipam.gateways[%d] %q: not an IP address", j, g)
		}
		v4 := ip.To4() != nil
		if slices.ContainsFunc(addrs, func(a net.IPNet) bool { return (a.IP.To4() != nil) == v4 }) {
			out = append(out, ip)
		}
	}
	return out, nil
}

// defaultEntry is the status entry of the pod's primary interface, as
// Multus writes it first. Its addresses are the sandbox's as the runtime
// reports them (sandboxIPs, from the CRI status the agent reads anyway to
// find the netns), so the first status write already carries them; the
// kubelet copies the same list into status.podIPs only at its next status
// update, which would cost a second write. podIPs is the fallback when the
// runtime reports none. The runtime's list wins when both are there, so
// the entry does not flip when the kubelet orders the families by the
// node's primary one; the runtime's order is the CNI result's, which is
// what Multus writes.
func defaultEntry(clusterNetwork string, sandboxIPs []string, podIPs []corev1.PodIP) v1alpha1.NetworkStatus {
	e := v1alpha1.NetworkStatus{Name: clusterNetwork, Interface: policy.PrimaryInterfaceName, Default: true}
	if len(sandboxIPs) > 0 {
		e.IPs = slices.Clone(sandboxIPs)
		return e
	}
	for _, ip := range podIPs {
		e.IPs = append(e.IPs, ip.IP)
	}
	return e
}

// networkStatus lists the default entry and then the approved interfaces
// that are in place, in approval order, with their addresses without prefix
// length as Multus writes them.
func networkStatus(namespace string, def v1alpha1.NetworkStatus, a *v1alpha1.Approval, in []dataplane.InterfaceStatus) []v1alpha1.NetworkStatus {
	byName := map[string]dataplane.InterfaceStatus{}
	for _, s := range in {
		byName[s.Name] = s
	}
	out := []v1alpha1.NetworkStatus{def}
	for _, ai := range a.Interfaces {
		s, ok := byName[ai.Interface]
		if !ok {
			continue
		}
		ns := v1alpha1.NetworkStatus{Name: namespace + "/" + ai.Network, Interface: ai.Interface, MAC: s.MAC, MTU: s.MTU, Tunnel: tunnelStatus(ai, s)}
		for _, ip := range s.IPs {
			addr, _, _ := strings.Cut(ip, "/")
			ns.IPs = append(ns.IPs, addr)
		}
		out = append(out, ns)
	}
	return out
}

// attachment names one (network, interface) pair a pod holds addresses for.
type attachment struct {
	Network   string
	Interface string
}

// held lists the pairs of a previous status annotation of the pod's
// namespace.
func held(namespace string, prev []v1alpha1.NetworkStatus) []attachment {
	var out []attachment
	for _, s := range prev {
		network, ok := strings.CutPrefix(s.Name, namespace+"/")
		if !ok || s.Default || network == "" || s.Interface == "" {
			continue
		}
		out = append(out, attachment{Network: network, Interface: s.Interface})
	}
	return out
}

// stale returns the pairs in had that the approval no longer lists (or
// lists without addresses or a MAC range), whose claims are to be
// released.
func stale(had []attachment, a *v1alpha1.Approval) []attachment {
	var out []attachment
	for _, h := range had {
		keep := a != nil && slices.ContainsFunc(a.Interfaces, func(ai v1alpha1.ApprovedInterface) bool {
			return ai.Network == h.Network && ai.Interface == h.Interface && holdsClaims(ai)
		})
		if !keep && !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	return out
}

// missing names the approved interfaces that Apply did not report in place.
func missing(a *v1alpha1.Approval, in []dataplane.InterfaceStatus) []string {
	var out []string
	for _, ai := range a.Interfaces {
		if !slices.ContainsFunc(in, func(s dataplane.InterfaceStatus) bool { return s.Name == ai.Interface }) {
			out = append(out, ai.Interface)
		}
	}
	return out
}

// withUnderlay completes the VXLAN interfaces of p with what an approval
// leaves to the node: the local address, when the approval names neither
// an address nor an interface, is this node's address of the underlay's
// family (nodeIPs: the Node's InternalIPs), and the peers are the other
// nodes' addresses of that family (peerIPs). It does not change p.
func withUnderlay(p dataplane.Pod, nodeIPs, peerIPs []net.IP) dataplane.Pod {
	out := p
	out.Interfaces = slices.Clone(p.Interfaces)
	for i, ifc := range out.Interfaces {
		if ifc.VXLAN == nil {
			continue
		}
		vx := *ifc.VXLAN
		family := underlayFamily(vx.Local)
		if vx.Local == nil && vx.Dev == "" {
			if own := ofFamily(nodeIPs, family); len(own) > 0 {
				vx.Local = own[0]
			}
		}
		vx.Peers = ofFamily(peerIPs, family)
		out.Interfaces[i].VXLAN = &vx
	}
	return out
}

// underlayFamily is the address length (net.IPv4len or net.IPv6len) of a
// VXLAN underlay whose local address is local: IPv6 only when local is an
// IPv6 address, as the NetworkProfile API documents.
func underlayFamily(local net.IP) int {
	if local != nil && local.To4() == nil {
		return net.IPv6len
	}
	return net.IPv4len
}

// ofFamily keeps the addresses of one family (an address length), in
// their order, in their canonical form.
func ofFamily(ips []net.IP, family int) []net.IP {
	var out []net.IP
	for _, ip := range ips {
		if v4 := ip.To4(); v4 != nil {
			ip = v4
		}
		if len(ip) == family {
			out = append(out, ip)
		}
	}
	return out
}
