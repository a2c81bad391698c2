package policy

import (
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"podnet.io/podnet/api/v1alpha1"
)

// ProfileSet is a list of NetworkProfiles together with everything a
// decision needs of them that depends on the profiles alone: their order
// by name, each profile's own validation, the clashes between their
// networks and the quotas of their address spaces. Deciding from a
// prepared set costs a decision only the matching of namespace selectors;
// preparing again on every decision revalidated every profile of the
// cluster per pod, which was most of the webhook's time per admission with
// a hundred profiles. A ProfileSet is never changed once made and is safe
// for concurrent use; the profiles it was made from must not change either.
type ProfileSet struct {
	// profiles are sorted by name.
	profiles []*v1alpha1.NetworkProfile
	// selectors are the profiles' namespace selectors, by the index of
	// profiles.
	selectors []selector
	// broken holds, by the index of profiles, the errors that make a
	// profile unusable as a whole (profileWide of ValidateNetworkProfile).
	broken []field.ErrorList
	// clashes are the bridge span clashes by profile and network name
	// (spanClashes).
	clashes map[[2]string]field.ErrorList
	// quotas are the per-namespace caps of the address spaces (SpaceQuotas).
	quotas map[string]int32
	// spans are the spanning networks' VXLAN ports and VNIs, which no
	// pod's VXLAN tunnel may use (tunnelOnSpan).
	spans []spanKey

	// same memoizes sameNetwork for pairs of the set's networks that one
	// namespace's profiles offer under one name: the comparison (a deep
	// copy, defaults, a semantic deep compare) depends on the profiles
	// alone, and was a quarter of a decision from a prepared set.
	sameMu sync.RWMutex
	same   map[[2]*v1alpha1.Network]bool
}

// NewProfileSet prepares profiles for any number of decisions. It keeps
// pointers into profiles, which the caller must not change afterwards.
func NewProfileSet(profiles []v1alpha1.NetworkProfile) *ProfileSet {
	s := &ProfileSet{profiles: make([]*v1alpha1.NetworkProfile, 0, len(profiles))}
	for i := range profiles {
		s.profiles = append(s.profiles, &profiles[i])
	}
	sort.SliceStable(s.profiles, func(i, j int) bool { return s.profiles[i].Name < s.profiles[j].Name })
	s.broken = make([]field.ErrorList, len(s.profiles))
	s.selectors = make([]selector, len(s.profiles))
	for i, p := range s.profiles {
		s.broken[i] = profileWide(ValidateNetworkProfile(p))
		s.selectors[i] = compileSelector(&p.Spec.NamespaceSelector)
	}
	s.clashes = spanClashes(s.profiles)
	s.spans = spanKeys(s.profiles)
	s.quotas = spaceQuotas(s.profiles, s.broken)
	return s
}

// selects reports whether the i-th profile selects a namespace with
// labels, or the error of its selector.
func (s *ProfileSet) selects(i int, labels map[string]string) (bool, error) {
	if err := s.selectors[i].err; err != nil {
		return false, err
	}
	return s.selectors[i].matches(labels), nil
}

// sameNetwork is sameNetwork of two networks of the set's profiles,
// computed once per pair.
func (s *ProfileSet) sameNetwork(a, b *v1alpha1.Network) bool {
	key := [2]*v1alpha1.Network{a, b}
	s.sameMu.RLock()
	eq, ok := s.same[key]
	s.sameMu.RUnlock()
	if ok {
		return eq
	}
	eq = sameNetwork(a, b)
	s.sameMu.Lock()
	if s.same == nil {
		s.same = map[[2]*v1alpha1.Network]bool{}
	}
	s.same[key] = eq
	s.sameMu.Unlock()
	return eq
}

// Len is the number of profiles in the set.
func (s *ProfileSet) Len() int { return len(s.profiles) }
