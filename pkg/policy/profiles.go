package policy

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"podnet.io/podnet/api/v1alpha1"
)

// DefaultMaxInterfaces is NetworkProfileSpec.MaxInterfaces when unset (the
// CRD defaults it too; this covers objects that never went through the API
// server).
const DefaultMaxInterfaces = 4

// offer is one network name a namespace may use.
type offer struct {
	name string
	// network is the definition; identical in every profile below.
	network *v1alpha1.Network
	// profiles offering it, sorted by name. Interfaces are counted against
	// the first one that still has room.
	profiles []*v1alpha1.NetworkProfile
	// conflict names the profiles that offer the name differently; such a
	// network is refused until an admin fixes them.
	conflict string
}

// scope is what applies to one pod: the profiles selecting its namespace,
// combined by network name. Profiles grant to namespaces, never to service
// accounts: a tenant creates service accounts in its namespace at will, so
// a limit by service account name would bound nothing.
type scope struct {
	namespace      string
	serviceAccount string
	enabled        bool
	// profiles are the matching profiles, sorted by name.
	profiles []*v1alpha1.NetworkProfile
	offers   map[string]*offer
	// names are the offered network names, sorted.
	names []string
	// quotas are the per-namespace caps of the address spaces, across all
	// profiles (SpaceQuotas).
	quotas map[string]int32
	// adminErrs are broken profiles that might have applied; they are
	// reported only when the pod's request is refused, as hints.
	adminErrs []string
	// set is the prepared profiles the scope was built from.
	set *ProfileSet
	// claimsFrom is the index of the first request that a ResourceClaim
	// makes (0: all, Input.byClaim; MaxInt: none); the others are the
	// annotation's.
	claimsFrom int
}

// buildScope selects the profiles that apply to the pod and combines them.
// Profiles are visited in name order so that the result never depends on
// the order the caller listed them in.
func buildScope(in Input) scope {
	s := scope{offers: map[string]*offer{}, claimsFrom: math.MaxInt}
	if in.byClaim {
		s.claimsFrom = 0
	}
	if in.Namespace != nil {
		s.namespace = in.Namespace.Name
		s.enabled = in.Namespace.Labels[v1alpha1.EnabledLabel] == "true"
	}
	s.serviceAccount = v1alpha1.DefaultServiceAccount
	if in.Pod != nil && in.Pod.Spec.ServiceAccountName != "" {
		s.serviceAccount = in.Pod.Spec.ServiceAccountName
	}
	if !s.enabled {
		return s
	}
	set := in.Prepared
	if set == nil {
		set = NewProfileSet(in.Profiles)
	}
	s.quotas = set.quotas
	s.set = set
	for i, p := range set.profiles {
		matched, err := set.selects(i, in.Namespace.Labels)
		if err != nil {
			s.adminErrs = append(s.adminErrs, fmt.Sprintf("profile %q has an invalid namespaceSelector: %v", p.Name, err))
			continue
		}
		if !matched {
			continue
		}
		if errs := set.broken[i]; len(errs) > 0 {
			for _, e := range errs {
				s.adminErrs = append(s.adminErrs, fmt.Sprintf("profile %q %s; an admin must fix the profile", p.Name, e.Detail))
			}
			continue
		}
		s.profiles = append(s.profiles, p)
		for i := range p.Spec.Networks {
			n := &p.Spec.Networks[i]
			s.add(p, n)
			if errs := set.clashes[[2]string{p.Name, n.Name}]; len(errs) > 0 {
				details := make([]string, len(errs))
				for i, e := range errs {
					details[i] = e.Detail
				}
				s.offers[n.Name].conflict = strings.Join(details, "; ")
			}
		}
	}
	s.names = make([]string, 0, len(s.offers))
	for name := range s.offers {
		s.names = append(s.names, name)
	}
	sort.Strings(s.names)
	return s
}

// add records that profile p offers network n, detecting a name offered
// differently by two profiles.
func (s *scope) add(p *v1alpha1.NetworkProfile, n *v1alpha1.Network) {
	o, ok := s.offers[n.Name]
	if !ok {
		s.offers[n.Name] = &offer{name: n.Name, network: n, profiles: []*v1alpha1.NetworkProfile{p}}
		return
	}
	if !s.set.sameNetwork(o.network, n) {
		names := make([]string, 0, len(o.profiles)+1)
		for _, q := range o.profiles {
			names = append(names, fmt.Sprintf("%q", q.Name))
		}
		names = append(names, fmt.Sprintf("%q", p.Name))
		o.conflict = fmt.Sprintf("network %q is offered differently by profiles %s; an admin must make them identical or rename one", n.Name, strings.Join(names, " and "))
	}
	o.profiles = append(o.profiles, p)
}

// sameNetwork compares two definitions after defaulting, so that a profile
// that spells out a default does not conflict with one that omits it.
func sameNetwork(a, b *v1alpha1.Network) bool {
	return equality.Semantic.DeepEqual(withDefaults(a), withDefaults(b))
}

func withDefaults(n *v1alpha1.Network) *v1alpha1.Network {
	c := n.DeepCopy()
	for _, k := range networkKinds {
		if k.set(c) && k.defaults != nil {
			k.defaults(c)
		}
	}
	return c
}

// The modes used when a profile names none (the CRD defaults them too).
const (
	DefaultMacvlanMode = "bridge"
	DefaultIPVlanMode  = "l2"
)

func maxInterfaces(p *v1alpha1.NetworkProfile) int {
	if p.Spec.MaxInterfaces <= 0 {
		return DefaultMaxInterfaces
	}
	return int(p.Spec.MaxInterfaces)
}

// Offer describes what the namespace may ask for, for denial messages:
// `namespace "t1" may use: data (profile "telco-data": bridge pnbr-data,
// mtu 1280-9000, vlans 100-199), uplink (…)`.
func Offer(in Input) string {
	return buildScope(in).describe()
}

func (s scope) describe() string {
	switch {
	case !s.enabled:
		return fmt.Sprintf("namespace %q is not opted in to podnet: an admin must label it %s=true", s.namespace, v1alpha1.EnabledLabel)
	case len(s.profiles) == 0:
		return fmt.Sprintf("namespace %q may use no networks: no NetworkProfile selects it", s.namespace)
	}
	parts := make([]string, 0, len(s.names)+1)
	for _, name := range s.names {
		o := s.offers[name]
		if o.conflict != "" {
			parts = append(parts, fmt.Sprintf("%s (unusable: %s)", name, o.conflict))
			continue
		}
		parts = append(parts, fmt.Sprintf("%s (%s: %s)", name, profileNames(o.profiles), describeNetwork(o.network)))
	}
	for _, p := range s.profiles {
		if pi := p.Spec.PrimaryInterface; pi != nil {
			parts = append(parts, fmt.Sprintf("primary interface %s (profile %q: mtu %s)", PrimaryInterfaceName, p.Name, describeMTU(&pi.MTU)))
		}
	}
	if len(parts) == 0 {
		return fmt.Sprintf("namespace %q may use no networks: its profiles offer none", s.namespace)
	}
	return fmt.Sprintf("namespace %q may use: %s", s.namespace, strings.Join(parts, ", "))
}

func profileNames(ps []*v1alpha1.NetworkProfile) string {
	if len(ps) == 1 {
		return fmt.Sprintf("profile %q", ps[0].Name)
	}
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = fmt.Sprintf("%q", p.Name)
	}
	return "profiles " + strings.Join(names, ", ")
}

// describeNetwork summarises the limits of a network in one line.
func describeNetwork(n *v1alpha1.Network) string {
	var b []string
	if k, err := kindOf(n); err == nil {
		b = k.describe(n)
	}
	if n.MTU != nil {
		b = append(b, "mtu "+describeMTU(n.MTU))
	} else {
		b = append(b, "mtu fixed")
	}
	if n.IPAM != nil {
		if n.IPAM.AllowStatic {
			b = append(b, "static ips in "+strings.Join(n.IPAM.Pools, " "))
		} else {
			b = append(b, "ips from "+strings.Join(n.IPAM.Pools, " ")+" (no static)")
		}
	} else {
		b = append(b, "no ips")
	}
	if n.Routes != nil {
		b = append(b, "routes within "+strings.Join(n.Routes.Allowed, " "))
	} else {
		b = append(b, "no routes")
	}
	if n.AllowStaticMAC {
		b = append(b, "static mac")
	}
	if r := n.MACRange; r != nil {
		b = append(b, "mac from "+r.RangeStart+"-"+r.RangeEnd)
	}
	if v := n.VRF; v != nil {
		b = append(b, "vrf tables "+strings.Join(v.Tables, " "))
	}
	return strings.Join(b, ", ")
}

func describeMTU(r *v1alpha1.MTURange) string {
	lo, hi := mtuBounds(r)
	s := fmt.Sprintf("%d-%d", lo, hi)
	if r.Default != nil {
		s += fmt.Sprintf(" (default %d)", *r.Default)
	}
	return s
}

func describeVLANs(v *v1alpha1.VLANPolicy) string {
	s := strings.Join(v.Allowed, ", ")
	if v.Default != nil {
		if s == "" {
			return fmt.Sprintf("%d only", *v.Default)
		}
		s += fmt.Sprintf(" (default %d)", *v.Default)
	}
	return s
}

// adminHints turns broken-profile notes into errors, so that a refused
// tenant sees that the cause may be on the admin's side.
func (s scope) adminHints() field.ErrorList {
	var errs field.ErrorList
	for _, e := range s.adminErrs {
		errs = append(errs, field.Forbidden(annotationPath, e))
	}
	return errs
}
