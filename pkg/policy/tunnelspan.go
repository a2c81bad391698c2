package policy

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"podnet.io/podnet/api/v1alpha1"
)

// spanKey is a spanning network's VXLAN port and VNI: a node carrying
// it has one VXLAN device and one tunnel lock of that port and VNI.
type spanKey struct {
	port, vni                int64
	profile, network, bridge string
	index                    int
}

func (k spanKey) String() string {
	return fmt.Sprintf("vni %d port %d of spanning network %q (bridge %q) in profile %q", k.vni, k.port, k.network, k.bridge, k.profile)
}

// spanKeys lists the VXLAN port and VNI of every spanning bridge network
// of the profiles, defaults filled in.
func spanKeys(profiles []*v1alpha1.NetworkProfile) []spanKey {
	var out []spanKey
	for _, p := range profiles {
		for i, n := range p.Spec.Networks {
			if n.Bridge == nil || n.Bridge.VXLAN == nil || n.Bridge.VXLAN.VNI == 0 {
				continue
			}
			port := int64(n.Bridge.VXLAN.Port)
			if port == 0 {
				port = DefaultVXLANPort
			}
			out = append(out, spanKey{port: port, vni: int64(n.Bridge.VXLAN.VNI), profile: p.Name, network: n.Name, bridge: n.Bridge.Name, index: i})
		}
	}
	return out
}

// tunnelSpanOverlap is the one clash rule of point-to-point VXLAN tunnels
// and spanning networks, used by admission (one port and VNI) and by
// profile status (a network's ranges): the spanning keys whose port is
// within ports and VNI within vnis. A node has one VXLAN device per port
// and VNI, whichever netns it sits in, so a pod's tunnel there would
// either fail or, locked beside the spanning network, make two locks of
// one port and VNI that each drop what the other admits.
func tunnelSpanOverlap(ports, vnis []portRange, spans []spanKey) []spanKey {
	var out []spanKey
	for _, k := range spans {
		if inRanges(ports, k.port) && inRanges(vnis, k.vni) {
			out = append(out, k)
		}
	}
	return out
}

// tunnelOnSpan refuses an approved VXLAN tunnel whose endpoint port and
// VNI a spanning network of any profile uses.
func tunnelOnSpan(p *field.Path, a v1alpha1.ApprovedInterface, spans []spanKey) field.ErrorList {
	if a.Kind != v1alpha1.KindVXLANTunnel || a.Tunnel == nil || len(spans) == 0 {
		return nil
	}
	ep, err := parseEndpoint(a.Tunnel.Endpoint)
	if err != nil {
		return nil // resolveTunnel refused it
	}
	port, vni := int64(ep.Port()), int64(a.Tunnel.VNI)
	hit := tunnelSpanOverlap([]portRange{{port, port}}, []portRange{{vni, vni}}, spans)
	if len(hit) == 0 {
		return nil
	}
	return field.ErrorList{field.Invalid(p.Child("vni"), a.Tunnel.VNI, fmt.Sprintf(
		"network %q: vxlan vni %d on endpoint port %d is the %s; a node has one vxlan device per port and vni, so a tunnel cannot share it: ask for another vni or endpoint port",
		a.Network, vni, port, describeSpanKeys(hit)))}
}

// tunnelSpanClashes finds, across all profiles, the VXLAN tunnel networks
// whose endpoint ports and VNIs include a spanning network's port and
// VNI, with errors for both networks, by profile and network name. Pods
// asking for such a port and VNI are refused at admission (tunnelOnSpan);
// the rest of the tunnel network stays usable.
func tunnelSpanClashes(profiles []*v1alpha1.NetworkProfile) map[[2]string]field.ErrorList {
	spans := spanKeys(profiles)
	if len(spans) == 0 {
		return nil
	}
	out := map[[2]string]field.ErrorList{}
	for _, p := range profiles {
		for i, n := range p.Spec.Networks {
			ports, vnis, ok := tunnelKeys(n.Tunnel)
			if !ok {
				continue
			}
			hit := tunnelSpanOverlap(ports, vnis, spans)
			if len(hit) == 0 {
				continue
			}
			key := [2]string{p.Name, n.Name}
			path := field.NewPath("spec", "networks").Index(i).Child("tunnel", "vxlan")
			out[key] = append(out[key], field.Invalid(path, describeTunnelKeys(n.Tunnel), fmt.Sprintf(
				"network %q: its vxlan vnis on its endpoint ports include the %s; a node has one vxlan device per port and vni, so pods asking for it are refused; an admin should change one",
				n.Name, describeSpanKeys(hit))))
			for _, k := range hit {
				key := [2]string{k.profile, k.network}
				path := field.NewPath("spec", "networks").Index(k.index).Child("bridge", "vxlan", "vni")
				out[key] = append(out[key], field.Invalid(path, k.vni, fmt.Sprintf(
					"network %q: vxlan vni %d port %d is within the vnis and endpoint ports of tunnel network %q in profile %q; a node has one vxlan device per port and vni; an admin should change one",
					k.network, k.vni, k.port, n.Name, p.Name)))
			}
		}
	}
	return out
}

// tunnelKeys are the endpoint ports and VNIs a VXLAN tunnel network
// allows; false for any other network, or one its validation refuses.
func tunnelKeys(t *v1alpha1.TunnelNetwork) (ports, vnis []portRange, ok bool) {
	if t == nil || t.VXLAN == nil {
		return nil, nil, false
	}
	rules, err := parseEndpoints(t)
	if err != nil {
		return nil, nil, false
	}
	for _, r := range rules {
		ports = append(ports, r.ports...)
	}
	if t.VXLAN.VNI != nil {
		return ports, []portRange{{int64(*t.VXLAN.VNI), int64(*t.VXLAN.VNI)}}, true
	}
	vnis, err = parseRanges("tunnel.vxlan.vnis", t.VXLAN.VNIs, maxVNI)
	return ports, vnis, err == nil
}

// describeTunnelKeys words a VXLAN tunnel network's VNIs and ports.
func describeTunnelKeys(t *v1alpha1.TunnelNetwork) string {
	vnis := strings.Join(t.VXLAN.VNIs, ",")
	if t.VXLAN.VNI != nil {
		vnis = strconv.Itoa(int(*t.VXLAN.VNI))
	}
	var ports []string
	for _, e := range t.Endpoints {
		ports = append(ports, e.Ports...)
	}
	return "vni " + vnis + " ports " + strings.Join(ports, ",")
}

func describeSpanKeys(ks []spanKey) string {
	words := make([]string, len(ks))
	for i, k := range ks {
		words[i] = k.String()
	}
	sort.Strings(words)
	return strings.Join(words, " and the ")
}

// spans are the spanning keys of the scope's profile set (none without
// one).
func (s scope) spans() []spanKey {
	if s.set == nil {
		return nil
	}
	return s.set.spans
}
