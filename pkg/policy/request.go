package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"regexp"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"podnet.io/podnet/api/v1alpha1"
)

// PrimaryInterfaceName is the pod's primary interface, made by the cluster's
// CNI. A request element naming it without a network asks to tune it.
const PrimaryInterfaceName = "eth0"

// maxInterfaceName is IFNAMSIZ - 1: the kernel refuses longer link names.
const maxInterfaceName = 15

// maxRequests bounds the work one annotation can cause; no profile grants
// more than 32 interfaces anyway.
const maxRequests = 64

// NetworkRequest is one element of the podnet.io/networks annotation.
type NetworkRequest struct {
	// Name of the network, as offered by a NetworkProfile. Empty only for the
	// primary interface tuning element.
	Name string `json:"name"`
	// Namespace, when given, must be the pod's own namespace.
	Namespace string `json:"namespace,omitempty"`
	// Interface is the name inside the pod; empty = the next free netN.
	Interface string `json:"interface,omitempty"`
	// MAC is a static MAC address.
	MAC string `json:"mac,omitempty"`
	// IPs are static addresses in CIDR notation.
	IPs []string `json:"ips,omitempty"`
	// MTU of the interface; 0 = the profile's default.
	MTU int32 `json:"mtu,omitempty"`
	// VLAN ID; 0 = the profile's default.
	VLAN int32 `json:"vlan,omitempty"`
	// Routes to add through the interface.
	Routes []RouteRequest `json:"routes,omitempty"`
	// DefaultRoute (Multus' key) names the gateways, one per family, via
	// which this interface carries the pod's default route; the profile
	// must allow it.
	DefaultRoute []string `json:"default-route,omitempty"`
	// VRF puts the interface into a VRF inside the pod; the profile must
	// allow it and the table.
	VRF *VRFRequest `json:"vrf,omitempty"`
	// Offloads turns ethtool features on (true) or off, each one the
	// network's offloads list names.
	Offloads map[string]bool `json:"offloads,omitempty"`
	// SLAAC asks for an IPv6 address from the network's router
	// advertisements; the network must take them.
	SLAAC bool `json:"slaac,omitempty"`
	// Settings are per-interface kernel settings (pkg/ifsettings), each
	// within the network's settings ranges.
	Settings map[string]int64 `json:"settings,omitempty"`
	// Endpoint is a tunnel's remote, "ip:port" ("[ip6]:port"), one of
	// the endpoints the tunnel network allows.
	Endpoint string `json:"endpoint,omitempty"`
	// PublicKey is a WireGuard tunnel's peer public key (base64).
	PublicKey string `json:"publicKey,omitempty"`
	// AllowedIPs are a WireGuard tunnel's peer allowed IPs (CIDRs within
	// the network's pools and routes.allowed); absent: the pools and the
	// routes' destinations.
	AllowedIPs []string `json:"allowedIPs,omitempty"`
	// VNI is a VXLAN tunnel's VNI, when the profile lets the tenant
	// choose it.
	VNI int32 `json:"vni,omitempty"`
	// Primary is set for the element that tunes the primary interface
	// ({"interface":"eth0","mtu":8900}); it carries only Interface and MTU.
	Primary bool `json:"-"`
}

// RouteRequest is a route a tenant asks for.
type RouteRequest struct {
	Dst     string `json:"dst"`
	Gateway string `json:"gateway,omitempty"`
}

// annotationPath is the root of every error about the request, so that a
// denial points at the annotation the tenant wrote.
var annotationPath = field.NewPath("metadata", "annotations").Key(v1alpha1.NetworksAnnotation)

// networkNameRE is the NetworkProfile network name pattern; a name that does
// not match can never be offered.
var networkNameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// ParseRequest parses a podnet.io/networks annotation in either Multus form:
// the short list "data, uplink@net2, tenant-ns/data" or a JSON list of
// NetworkRequest objects. It is strict: unknown JSON fields, duplicate
// interface names, bad CIDRs, MACs or gateways, and interface names the
// kernel would refuse are errors. An interface not named gets netN, N being
// its position in the list, as Multus names it. Keys of the Multus JSON form
// that podnet does not honour are refused with the reason (multusOnlyKeys).
// A blank annotation asks for nothing.
//
// ParseRequest does not know the pod, so it keeps a `namespace/` prefix in
// Namespace; Decide refuses one that is not the pod's namespace.
func ParseRequest(annotation string) ([]NetworkRequest, field.ErrorList) {
	text := strings.TrimSpace(annotation)
	if text == "" {
		return nil, nil
	}
	var reqs []NetworkRequest
	var errs field.ErrorList
	switch {
	case strings.HasPrefix(text, "["):
		reqs, errs = parseJSON(text)
	case strings.HasPrefix(text, "{"):
		return nil, field.ErrorList{field.Invalid(annotationPath, text, "the JSON form is a list of objects: wrap the object in [ ]")}
	default:
		reqs, errs = parseShort(text)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	if len(reqs) > maxRequests {
		return nil, tooManyRequests(len(reqs))
	}
	for i := range reqs {
		errs = append(errs, validateRequest(annotationPath.Index(i), &reqs[i])...)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	if errs := validateTogether(reqs, assignInterfaceNames(reqs)); len(errs) > 0 {
		return nil, errs
	}
	return reqs, nil
}

// validateTogether checks what the elements of one request must agree on:
// one default route per family, one element per interface name (auto
// says which names were assigned), VRFs. A pod's annotation and its
// claims' requests are checked together by the same (DecideWithClaims).
func validateTogether(reqs []NetworkRequest, auto []bool) field.ErrorList {
	if errs := validateDefaultRoutes(reqs); len(errs) > 0 {
		return errs
	}
	if errs := validateInterfaceNames(reqs, auto); len(errs) > 0 {
		return errs
	}
	return validateVRFs(reqs)
}

func tooManyRequests(n int) field.ErrorList {
	return field.ErrorList{field.Invalid(annotationPath, fmt.Sprintf("%d networks", n), fmt.Sprintf("too many networks: at most %d may be asked for", maxRequests))}
}

// parseShort parses "name, ns/name@if, …" with the rules of Multus: spaces
// around each element and around '/' and '@' do not count, at most one '/'
// and one '@' per element.
func parseShort(text string) ([]NetworkRequest, field.ErrorList) {
	var reqs []NetworkRequest
	var errs field.ErrorList
	for i, item := range strings.Split(text, ",") {
		r, err := parseShortItem(annotationPath.Index(i), strings.TrimSpace(item))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		reqs = append(reqs, r)
	}
	return reqs, errs
}

// parseShortItem parses one "ns/name@if" element.
func parseShortItem(p *field.Path, item string) (NetworkRequest, *field.Error) {
	var r NetworkRequest
	if item == "" {
		return r, field.Required(p, "empty element in the network list (stray comma?)")
	}
	if strings.Count(item, "/") > 1 {
		return r, field.Invalid(p, item, "more than one '/': write namespace/name@interface")
	}
	if strings.Count(item, "@") > 1 {
		return r, field.Invalid(p.Child("interface"), item, "more than one '@': one element asks for one interface (namespace/name@interface)")
	}
	ref, iface, hasIface := strings.Cut(item, "@")
	if hasIface {
		r.Interface = strings.TrimSpace(iface)
		if r.Interface == "" {
			return r, field.Required(p.Child("interface"), fmt.Sprintf("%q: nothing after @", item))
		}
	}
	ns, name, hasNS := strings.Cut(ref, "/")
	if !hasNS {
		ns, name = "", ref
	}
	r.Namespace, r.Name = strings.TrimSpace(ns), strings.TrimSpace(name)
	if hasNS && r.Namespace == "" {
		return r, field.Required(p.Child("namespace"), fmt.Sprintf("%q: nothing before / (write the name alone for the pod's own namespace)", item))
	}
	if r.Name == "" {
		return r, field.Required(p.Child("name"), fmt.Sprintf("%q: no network name", item))
	}
	return r, nil
}

// parseJSON parses the JSON list form, refusing unknown fields and trailing
// data so that a typo ("vlanid") is an error instead of a silently ignored
// wish, and Multus keys podnet does not honour with the reason.
func parseJSON(text string) ([]NetworkRequest, field.ErrorList) {
	dec := json.NewDecoder(bytes.NewReader([]byte(text)))
	dec.DisallowUnknownFields()
	var elems []jsonElement
	if err := dec.Decode(&elems); err != nil {
		return nil, field.ErrorList{field.Invalid(annotationPath, text, "not a valid JSON network list: "+err.Error())}
	}
	if dec.More() {
		return nil, field.ErrorList{field.Invalid(annotationPath, text, "unexpected data after the JSON network list")}
	}
	reqs := make([]NetworkRequest, len(elems))
	var errs field.ErrorList
	for i := range elems {
		errs = append(errs, refuseMultusKeys(annotationPath.Index(i), &elems[i])...)
		reqs[i] = elems[i].NetworkRequest
		if reqs[i].Name == "" && reqs[i].Interface == PrimaryInterfaceName {
			reqs[i].Primary = true
		}
	}
	return reqs, errs
}

// validateRequest checks one element on its own: syntax only, no policy.
func validateRequest(p *field.Path, r *NetworkRequest) field.ErrorList {
	var errs field.ErrorList
	if r.Primary {
		return validatePrimaryRequest(p, r)
	}
	if r.Name == "" {
		return append(errs, field.Required(p.Child("name"), "a network name is required (only {\"interface\":\"eth0\",\"mtu\":N} may omit it, to tune the primary interface)"))
	}
	if len(r.Name) > 32 || !networkNameRE.MatchString(r.Name) {
		errs = append(errs, field.Invalid(p.Child("name"), r.Name, "not a network name: lowercase letters, digits and '-', at most 32 characters"))
	}
	if r.Namespace != "" {
		if msgs := validateDNSLabel(r.Namespace); msgs != "" {
			errs = append(errs, field.Invalid(p.Child("namespace"), r.Namespace, msgs))
		}
	}
	if r.Interface != "" {
		errs = append(errs, validateInterfaceName(p.Child("interface"), r.Name, r.Interface)...)
	}
	if r.MAC != "" {
		if mac, err := net.ParseMAC(r.MAC); err != nil || len(mac) != 6 {
			errs = append(errs, field.Invalid(p.Child("mac"), r.MAC, fmt.Sprintf("network %q: not an Ethernet MAC address (aa:bb:cc:dd:ee:ff)", r.Name)))
		}
	}
	if r.MTU < 0 {
		errs = append(errs, field.Invalid(p.Child("mtu"), r.MTU, fmt.Sprintf("network %q: mtu must be positive", r.Name)))
	}
	if r.VLAN < 0 || r.VLAN > 4094 {
		errs = append(errs, field.Invalid(p.Child("vlan"), r.VLAN, fmt.Sprintf("network %q: vlan must be within 1-4094", r.Name)))
	}
	seenFamily := map[bool]string{}
	for j, s := range r.IPs {
		pfx, err := parsePrefix(s)
		if err != nil {
			errs = append(errs, field.Invalid(p.Child("ips").Index(j), s, fmt.Sprintf("network %q: not an address in CIDR notation (192.168.100.7/24): %v", r.Name, err)))
			continue
		}
		v4 := pfx.Addr().Is4()
		if prev, dup := seenFamily[v4]; dup {
			errs = append(errs, field.Invalid(p.Child("ips").Index(j), s, fmt.Sprintf("network %q: one %s address per interface, and %s is one", r.Name, familyName(v4), prev)))
			continue
		}
		seenFamily[v4] = s
	}
	errs = append(errs, validateDefaultRoute(p.Child("default-route"), r)...)
	errs = append(errs, validateVRFRequest(p.Child("vrf"), r)...)
	errs = append(errs, validateTunnelRequest(p, r)...)
	dsts := map[netip.Prefix]bool{}
	for j, rt := range r.Routes {
		rp := p.Child("routes").Index(j)
		dst, err := parsePrefix(rt.Dst)
		if err != nil {
			errs = append(errs, field.Invalid(rp.Child("dst"), rt.Dst, fmt.Sprintf("network %q: not a CIDR: %v", r.Name, err)))
			continue
		}
		if dst.Masked() != dst {
			errs = append(errs, field.Invalid(rp.Child("dst"), rt.Dst, fmt.Sprintf("network %q: host bits set; did you mean %s?", r.Name, dst.Masked())))
			continue
		}
		if dsts[dst] {
			errs = append(errs, field.Invalid(rp.Child("dst"), rt.Dst, fmt.Sprintf("network %q: route asked for twice", r.Name)))
			continue
		}
		dsts[dst] = true
		if rt.Gateway != "" {
			gw, err := parseAddr(rt.Gateway)
			if err != nil {
				errs = append(errs, field.Invalid(rp.Child("gateway"), rt.Gateway, fmt.Sprintf("network %q: not an IP address: %v", r.Name, err)))
			} else if gw.Is4() != dst.Addr().Is4() {
				errs = append(errs, field.Invalid(rp.Child("gateway"), rt.Gateway, fmt.Sprintf("network %q: gateway family differs from dst %s", r.Name, rt.Dst)))
			}
		}
	}
	return errs
}

// validatePrimaryRequest allows only the MTU on the primary interface: its
// addresses and routes belong to the cluster's CNI.
func validatePrimaryRequest(p *field.Path, r *NetworkRequest) field.ErrorList {
	var errs field.ErrorList
	bad := func(name string, set bool) {
		if set {
			errs = append(errs, field.Forbidden(p.Child(name), "the primary interface eth0 belongs to the cluster's CNI: only its mtu may be tuned"))
		}
	}
	bad("namespace", r.Namespace != "")
	bad("mac", r.MAC != "")
	bad("ips", len(r.IPs) > 0)
	bad("vlan", r.VLAN != 0)
	bad("routes", len(r.Routes) > 0)
	bad("default-route", r.DefaultRoute != nil)
	bad("vrf", r.VRF != nil)
	bad("endpoint", r.Endpoint != "")
	bad("publicKey", r.PublicKey != "")
	bad("allowedIPs", len(r.AllowedIPs) > 0)
	bad("vni", r.VNI != 0)
	if r.MTU <= 0 {
		errs = append(errs, field.Required(p.Child("mtu"), "tuning the primary interface eth0 needs an mtu"))
	}
	return errs
}

// validateInterfaceName applies the kernel's rules for link names
// (dev_valid_name) and keeps the names podnet must not take.
func validateInterfaceName(p *field.Path, network, name string) field.ErrorList {
	switch {
	case len(name) > maxInterfaceName:
		return field.ErrorList{field.Invalid(p, name, fmt.Sprintf("network %q: interface names are at most %d characters (the kernel's limit)", network, maxInterfaceName))}
	case name == "." || name == ".." || strings.ContainsAny(name, "/:%,") || !isPrintableASCII(name):
		// The kernel refuses '/', ':' and spaces, and expands '%d' into a
		// number, so the interface would not get the asked-for name. A
		// comma the kernel takes, but the wait container and the wait hook
		// get the pod's interfaces as one comma-separated argument, and
		// would wait for the pieces of such a name.
		return field.ErrorList{field.Invalid(p, name, fmt.Sprintf("network %q: not a valid interface name (printable ASCII without '/', ':', '%%', ',' or spaces; not '.' or '..')", network))}
	case name == PrimaryInterfaceName || name == "lo":
		return field.ErrorList{field.Invalid(p, name, fmt.Sprintf("network %q: %s is the pod's own interface; pick another name", network, name))}
	}
	return nil
}

func isPrintableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// validateInterfaceNames refuses two elements that end up with the same
// interface name, and more than one primary tuning element. auto tells
// which names assignInterfaceNames chose, so the error can say why.
func validateInterfaceNames(reqs []NetworkRequest, auto []bool) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]int{}
	primary := -1
	for i, r := range reqs {
		if r.Primary {
			if primary >= 0 {
				errs = append(errs, field.Invalid(annotationPath.Index(i).Child("interface"), r.Interface, fmt.Sprintf("primary interface already tuned by element %d", primary)))
			}
			primary = i
			continue
		}
		j, dup := seen[r.Interface]
		if !dup {
			seen[r.Interface] = i
			continue
		}
		msg := fmt.Sprintf("network %q: interface name already used by element %d (network %q)", r.Name, j, reqs[j].Name)
		if auto[i] || auto[j] {
			msg += "; an element without an interface name gets netN from its position N in the list, as with Multus"
		}
		errs = append(errs, field.Invalid(annotationPath.Index(i).Child("interface"), r.Interface, msg))
	}
	return errs
}

// assignInterfaceNames names every unnamed interface the way Multus does:
// net<N>, N being the element's position among the network elements,
// counted from 1. A workload moved from Multus thus finds its interfaces
// under the same names. The primary tuning element attaches nothing, so it
// takes no position. It reports which names it chose.
func assignInterfaceNames(reqs []NetworkRequest) []bool {
	auto := make([]bool, len(reqs))
	n := 0
	for i := range reqs {
		if reqs[i].Primary {
			continue
		}
		n++
		if reqs[i].Interface == "" {
			reqs[i].Interface = "net" + strconv.Itoa(n)
			auto[i] = true
		}
	}
	return auto
}

// validateDNSLabel returns why s is not a namespace name, or "".
func validateDNSLabel(s string) string {
	if len(s) > 63 || !networkNameRE.MatchString(s) {
		return "not a namespace name: lowercase letters, digits and '-', at most 63 characters"
	}
	return ""
}

// parsePrefix parses an address or network in CIDR notation. IPv4-mapped
// IPv6 forms and zones are refused: the kernel would treat them as another
// family or scope than the tenant meant.
func parsePrefix(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	if p.Addr().Is4In6() {
		return netip.Prefix{}, fmt.Errorf("IPv4-mapped IPv6 address: write the IPv4 form")
	}
	return p, nil
}

// parseAddr parses a plain IP address with the same restrictions.
func parseAddr(s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, err
	}
	if a.Is4In6() {
		return netip.Addr{}, fmt.Errorf("IPv4-mapped IPv6 address: write the IPv4 form")
	}
	if a.Zone() != "" {
		return netip.Addr{}, fmt.Errorf("zoned address")
	}
	return a, nil
}

func familyName(v4 bool) string {
	if v4 {
		return "IPv4"
	}
	return "IPv6"
}
