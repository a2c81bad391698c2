package policy

import (
	"sort"

	"podnet.io/podnet/api/v1alpha1"
)

// Network returns the network of the named profile, or nil: what an
// approved interface's Profile and Network name, for the decisions that
// follow from the profile's own words (where the pod may run, pkg/carry).
func (s *ProfileSet) Network(profile, network string) *v1alpha1.Network {
	i := sort.Search(len(s.profiles), func(i int) bool { return s.profiles[i].Name >= profile })
	if i == len(s.profiles) || s.profiles[i].Name != profile {
		return nil
	}
	nets := s.profiles[i].Spec.Networks
	for j := range nets {
		if nets[j].Name == network {
			return &nets[j]
		}
	}
	return nil
}
