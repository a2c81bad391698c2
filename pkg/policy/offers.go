package policy

// OfferedNetwork is one network a namespace may ask for, as a row of a
// table: what `kubectl podnet networks` prints. Offer is the same in one
// sentence.
type OfferedNetwork struct {
	// Name is what the tenant writes in podnet.io/networks.
	Name string `json:"name"`
	// Profiles offering it, sorted by name.
	Profiles []OfferingProfile `json:"profiles"`
	// Limits summarises kind, MTU, addresses, routes and MAC in one line.
	Limits string `json:"limits,omitempty"`
	// Unusable, when set, says why the network is refused (profiles that
	// offer the name differently).
	Unusable string `json:"unusable,omitempty"`
}

// OfferingProfile is a profile that offers a network, with its interface
// limit.
type OfferingProfile struct {
	Name          string `json:"name"`
	MaxInterfaces int    `json:"maxInterfaces"`
}

// OfferedPrimary is a profile's tuning of the primary interface (eth0).
type OfferedPrimary struct {
	Profile string `json:"profile"`
	MTU     string `json:"mtu"`
}

// Offers is what applies to one namespace and service account.
type Offers struct {
	Namespace      string `json:"namespace"`
	ServiceAccount string `json:"serviceAccount"`
	// Enabled is false when the namespace is not opted in.
	Enabled  bool             `json:"enabled"`
	Networks []OfferedNetwork `json:"networks"`
	// Primary lists the profiles that let pods tune the primary interface.
	Primary []OfferedPrimary `json:"primary,omitempty"`
	// Summary is Offer's sentence: also the reason when Networks is empty.
	Summary string `json:"summary"`
}

// OfferList returns what the namespace (and the pod's service account) may
// ask for, from the same selection that Decide judges requests by.
func OfferList(in Input) Offers {
	s := buildScope(in)
	out := Offers{Namespace: s.namespace, ServiceAccount: s.serviceAccount, Enabled: s.enabled,
		Networks: []OfferedNetwork{}, Summary: s.describe()}
	for _, name := range s.names {
		o := s.offers[name]
		row := OfferedNetwork{Name: name, Unusable: o.conflict}
		for _, p := range o.profiles {
			row.Profiles = append(row.Profiles, OfferingProfile{Name: p.Name, MaxInterfaces: maxInterfaces(p)})
		}
		if o.conflict == "" {
			row.Limits = describeNetwork(o.network)
		}
		out.Networks = append(out.Networks, row)
	}
	for _, p := range s.profiles {
		if pi := p.Spec.PrimaryInterface; pi != nil {
			out.Primary = append(out.Primary, OfferedPrimary{Profile: p.Name, MTU: describeMTU(&pi.MTU)})
		}
	}
	return out
}
