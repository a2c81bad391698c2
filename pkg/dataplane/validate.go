package dataplane

import (
	"errors"
	"fmt"
	"net"
	"regexp"
	"strings"

	"podnet.io/podnet/pkg/ifsettings"
)

// Limits that every Pod is checked against before anything is touched.
const (
	maxLinkName = 15 // IFNAMSIZ - 1
	minMTU      = 68 // smallest IPv4 MTU (RFC 791)
	minMTUIPv6  = 1280
	maxMTU      = 65535
	maxVLAN     = 4094
	maxUID      = 128
	primaryName = "eth0"
)

// validatePod checks the pod-wide fields. An error here stops the whole
// Apply: without them nothing can be named or found.
func validatePod(p Pod) error {
	var errs []error
	if p.UID == "" {
		errs = append(errs, errors.New("pod uid: must not be empty"))
	} else if len(p.UID) > maxUID || strings.ContainsAny(p.UID, aliasSep+"/ \t\n") {
		errs = append(errs, fmt.Errorf("pod uid %q: must be at most %d characters without ':', '/' or spaces", p.UID, maxUID))
	}
	if p.NetNS == "" {
		errs = append(errs, errors.New("pod netns: must not be empty"))
	}
	if p.PrimaryMTU != 0 && (p.PrimaryMTU < minMTU || p.PrimaryMTU > maxMTU) {
		errs = append(errs, fmt.Errorf("primary mtu %d: must be 0 or between %d and %d", p.PrimaryMTU, minMTU, maxMTU))
	}
	return errors.Join(errs...)
}

// validateInterface checks one interface on its own; duplicates across
// interfaces are found by validateInterfaces.
func validateInterface(ifc Interface) error {
	var errs []error
	add := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf(format, args...))
	}
	if err := validateLinkName(ifc.Name); err != nil {
		add("name: %w", err)
	} else if reservedName(ifc.Name) {
		add("name: %q is not a secondary interface", ifc.Name)
	}
	errs = append(errs, validateKindFields(ifc)...)
	errs = append(errs, validateVRF(ifc)...)
	errs = append(errs, validateSettings(ifc.Settings)...)
	for _, name := range sortedKeys(ifc.Offloads) {
		if !offloadNameRE.MatchString(name) {
			errs = append(errs, fmt.Errorf("offloads: %q is not a feature name", name))
		}
	}
	hasIPv6 := false
	seen := map[string]bool{}
	for _, a := range ifc.Addresses {
		key, err := addressKey(a)
		if err != nil {
			add("address %s: %w", a.String(), err)
			continue
		}
		if seen[key] {
			add("address %s: listed twice", key)
		}
		seen[key] = true
		if a.IP.To4() == nil {
			hasIPv6 = true
			if a.IP.IsLinkLocalUnicast() {
				add("address %s: IPv6 link-local addresses are made by the kernel", key)
			}
		}
	}
	if ifc.MTU != 0 {
		low := minMTU
		if hasIPv6 {
			low = minMTUIPv6
		}
		if ifc.MTU < low || ifc.MTU > maxMTU {
			add("mtu %d: must be 0 or between %d and %d", ifc.MTU, low, maxMTU)
		}
	}
	if ifc.MAC != nil {
		if len(ifc.MAC) != 6 {
			add("mac %s: must be a 6-byte Ethernet address", ifc.MAC)
		} else if ifc.MAC[0]&1 != 0 || isZero(ifc.MAC) {
			add("mac %s: must be a unicast, non-zero address", ifc.MAC)
		}
	}
	seenRoutes := map[string]bool{}
	for _, r := range ifc.Routes {
		key, err := routeKey(r)
		if err != nil {
			add("route %s: %w", r.Dst.String(), err)
			continue
		}
		if seenRoutes[key] {
			add("route %s: listed twice", r.Dst.String())
		}
		seenRoutes[key] = true
	}
	if len(errs) > 0 {
		return fmt.Errorf("interface %q: %w", ifc.Name, errors.Join(errs...))
	}
	return nil
}

// validateInterfaces returns the interfaces that may be planned and an error
// for each one that may not. A name listed twice invalidates both entries.
func validateInterfaces(ifcs []Interface) ([]Interface, map[string]bool, error) {
	count := map[string]int{}
	for _, ifc := range ifcs {
		count[ifc.Name]++
	}
	var valid []Interface
	invalid := map[string]bool{}
	var errs []error
	for _, ifc := range ifcs {
		if count[ifc.Name] > 1 {
			if !invalid[ifc.Name] {
				errs = append(errs, fmt.Errorf("interface %q: listed %d times", ifc.Name, count[ifc.Name]))
			}
			invalid[ifc.Name] = true
			continue
		}
		if err := validateInterface(ifc); err != nil {
			errs = append(errs, err)
			invalid[ifc.Name] = true
			continue
		}
		valid = append(valid, ifc)
	}
	return valid, invalid, errors.Join(errs...)
}

// validateLinkName checks a kernel link name.
func validateLinkName(name string) error {
	switch {
	case name == "":
		return errors.New("must not be empty")
	case len(name) > maxLinkName:
		return fmt.Errorf("%q is longer than %d characters", name, maxLinkName)
	case name == "." || name == "..":
		return fmt.Errorf("%q is not a valid link name", name)
	case strings.ContainsAny(name, "/: \t\n"):
		return fmt.Errorf("%q must not contain '/', ':' or spaces", name)
	}
	return nil
}

// addressKey is the canonical text of an address with prefix, so that 4- and
// 16-byte forms of one IPv4 address compare equal.
func addressKey(a net.IPNet) (string, error) {
	ip := canonicalIP(a.IP)
	if ip == nil {
		return "", errors.New("not an IP address")
	}
	ones, bits := a.Mask.Size()
	if bits == 0 || (bits != 8*len(ip) && !(bits == 128 && len(ip) == 4 && ones >= 96)) {
		return "", errors.New("invalid prefix length")
	}
	if bits == 128 && len(ip) == 4 {
		ones -= 96
	}
	return fmt.Sprintf("%s/%d", ip, ones), nil
}

// routeKey is the canonical text of a route; the destination must be a
// network address, as the kernel rejects host bits in it.
func routeKey(r Route) (string, error) {
	dst, err := addressKey(r.Dst)
	if err != nil {
		return "", err
	}
	ip := canonicalIP(r.Dst.IP)
	_, n, _ := net.ParseCIDR(dst)
	if !n.IP.Equal(ip) {
		return "", fmt.Errorf("destination has host bits set (want %s)", n)
	}
	if r.Gateway == nil {
		return vrfRouteKey(dst, r), nil
	}
	gw := canonicalIP(r.Gateway)
	if gw == nil {
		return "", errors.New("gateway is not an IP address")
	}
	if len(gw) != len(ip) {
		return "", fmt.Errorf("gateway %s is not of the destination's address family", gw)
	}
	return vrfRouteKey(dst+" via "+gw.String(), r), nil
}

// canonicalNet returns a validated address with a 4-byte IPv4 and a mask of
// the address' length, the form the kernel reports.
func canonicalNet(n net.IPNet) net.IPNet {
	ip := canonicalIP(n.IP)
	ones, bits := n.Mask.Size()
	if bits == 128 && len(ip) == net.IPv4len {
		ones -= 96
	}
	return net.IPNet{IP: ip, Mask: net.CIDRMask(ones, 8*len(ip))}
}

// canonicalIP returns 4 bytes for IPv4, 16 for IPv6 and nil for garbage.
func canonicalIP(ip net.IP) net.IP {
	if v4 := ip.To4(); v4 != nil {
		return v4
	}
	if len(ip) == net.IPv6len {
		return ip
	}
	return nil
}

func isZero(b []byte) bool {
	for _, v := range b {
		if v != 0 {
			return false
		}
	}
	return true
}

// offloadNameRE is what a kernel feature name looks like (the API's
// pattern): it is only ever compared with the device's own names.
var offloadNameRE = regexp.MustCompile(`^[a-z0-9]+([-_][a-z0-9]+)*$`)

// validateSettings checks each setting's name against the table and its
// value against what the kernel takes: a name is looked up, never used
// as a path.
func validateSettings(settings map[string]int64) []error {
	var errs []error
	for _, name := range sortedKeys(settings) {
		s, ok := ifsettings.Lookup(name)
		if !ok {
			errs = append(errs, fmt.Errorf("settings: %w", ifsettings.Unknown(name)))
			continue
		}
		if err := s.Check(settings[name]); err != nil {
			errs = append(errs, fmt.Errorf("settings: %w", err))
		}
	}
	return errs
}

// reservedName reports whether a pod link's name is one podnet never gives
// a link of its own: the pod's loopback and primary interface.
func reservedName(name string) bool { return name == primaryName || name == "lo" }
