package policy

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/approval"
)

// Input is everything a decision depends on.
type Input struct {
	// Namespace of the pod, with its labels.
	Namespace *corev1.Namespace
	// Pod as admitted: its annotations and spec.serviceAccountName are read.
	Pod *corev1.Pod
	// Profiles are all NetworkProfiles; Decide picks those that apply.
	Profiles []v1alpha1.NetworkProfile
	// Prepared, when not nil, is NewProfileSet of Profiles, made once for
	// many decisions (the webhook makes one per change of the profiles);
	// Profiles is then not read.
	Prepared *ProfileSet

	// byClaim: the request is a ResourceClaim's (DecideClaim), which may
	// ask for networks that only the scheduler hands out.
	byClaim bool
}

// Decide parses the pod's podnet.io/networks annotation and judges it
// against the profiles that apply to the pod. A pod without the annotation,
// or with a blank one, asks for nothing: Decide returns (nil, nil). On
// denial the ErrorList is non-empty, Approval is nil, and the list ends with
// what the namespace may ask for instead, so errs.ToAggregate().Error() is a
// message fit for `kubectl apply` output.
func Decide(in Input) (*v1alpha1.Approval, field.ErrorList) {
	if in.Pod == nil || in.Namespace == nil {
		return nil, field.ErrorList{field.InternalError(annotationPath, fmt.Errorf("policy input lacks the pod or its namespace"))}
	}
	if in.Pod.Namespace != "" && in.Pod.Namespace != in.Namespace.Name {
		return nil, field.ErrorList{field.InternalError(annotationPath, fmt.Errorf("policy input pairs pod namespace %q with namespace object %q", in.Pod.Namespace, in.Namespace.Name))}
	}
	raw, ok := in.Pod.Annotations[v1alpha1.NetworksAnnotation]
	if !ok || strings.TrimSpace(raw) == "" {
		return nil, nil
	}
	s := buildScope(in)
	if msgs := validation.IsDNS1123Subdomain(s.serviceAccount); len(msgs) > 0 {
		// The API server validates the name only after mutating admission;
		// an approval must never carry a name that no pod can have.
		return nil, field.ErrorList{field.Invalid(field.NewPath("spec", "serviceAccountName"), s.serviceAccount, strings.Join(msgs, "; "))}
	}
	reqs, errs := ParseRequest(raw)
	if len(errs) == 0 && s.enabled {
		var a *v1alpha1.Approval
		a, errs = s.decide(reqs)
		if len(errs) == 0 {
			a.RequestHash = approval.HashRequest(raw)
			return a, nil
		}
	}
	// The last entry says what the namespace may use instead, or that it is
	// not opted in at all.
	errs = append(errs, s.adminHints()...)
	return nil, append(errs, field.Forbidden(annotationPath, s.describe()))
}

// decide resolves parsed requests into an approval for an opted-in
// namespace.
func (s scope) decide(reqs []NetworkRequest) (*v1alpha1.Approval, field.ErrorList) {
	a := &v1alpha1.Approval{
		Namespace:      s.namespace,
		ServiceAccount: s.serviceAccount,
		Profiles:       []v1alpha1.ProfileRef{},
		Interfaces:     []v1alpha1.ApprovedInterface{},
	}
	var errs field.ErrorList
	granted := map[*v1alpha1.NetworkProfile]int{}
	used := newPodUsage()
	for i, r := range reqs {
		p := annotationPath.Index(i)
		if r.Primary {
			mtu, prof, e := s.resolvePrimary(p, r)
			errs = append(errs, e...)
			if prof != nil {
				a.PrimaryMTU = mtu
				// Listed in Profiles, but no interface is counted.
				if _, ok := granted[prof]; !ok {
					granted[prof] = 0
				}
			}
			continue
		}
		if r.Namespace != "" && r.Namespace != s.namespace {
			errs = append(errs, field.Invalid(p.Child("namespace"), r.Namespace, fmt.Sprintf("network %q: profiles grant networks to the pod's own namespace %q only; references to other namespaces are not allowed", r.Name, s.namespace)))
			continue
		}
		o := s.offers[r.Name]
		switch {
		case o == nil:
			e := field.NotFound(p.Child("name"), r.Name)
			e.Detail = fmt.Sprintf("no profile offers network %q to namespace %q", r.Name, s.namespace)
			errs = append(errs, e)
			continue
		case o.conflict != "":
			errs = append(errs, field.Invalid(p.Child("name"), r.Name, o.conflict))
			continue
		}
		if e := claimOnly(p, r.Name, o, i >= s.claimsFrom); e != nil {
			errs = append(errs, e)
			continue
		}
		prof := pickProfile(o, granted)
		if prof == nil {
			errs = append(errs, field.Forbidden(p, fmt.Sprintf("network %q: interface %s would be interface %d through %s, above maxInterfaces %s", r.Name, r.Interface, countFor(o, granted)+1, profileNames(o.profiles), maxList(o.profiles))))
			continue
		}
		iface, e := resolveInterface(p, r, o.network, prof)
		if len(e) == 0 {
			s.withQuota(&iface)
			e = append(used.add(p, iface), tunnelOnSpan(p, iface, s.spans())...)
		}
		errs = append(errs, e...)
		if len(e) == 0 {
			granted[prof]++
			a.Interfaces = append(a.Interfaces, iface)
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	for prof := range granted {
		a.Profiles = append(a.Profiles, v1alpha1.ProfileRef{Name: prof.Name, Generation: prof.Generation})
	}
	sort.Slice(a.Profiles, func(i, j int) bool { return a.Profiles[i].Name < a.Profiles[j].Name })
	return a, nil
}

// pickProfile returns the first profile (by name) offering the network that
// still has room for another interface, or nil.
func pickProfile(o *offer, granted map[*v1alpha1.NetworkProfile]int) *v1alpha1.NetworkProfile {
	for _, p := range o.profiles {
		if granted[p] < maxInterfaces(p) {
			return p
		}
	}
	return nil
}

func countFor(o *offer, granted map[*v1alpha1.NetworkProfile]int) int {
	n := 0
	for _, p := range o.profiles {
		n += granted[p]
	}
	return n
}

func maxList(ps []*v1alpha1.NetworkProfile) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = fmt.Sprint(maxInterfaces(p))
	}
	return strings.Join(parts, "+")
}

// resolvePrimary checks the primary interface MTU against the first profile
// (by name) whose primaryInterface range allows it.
func (s scope) resolvePrimary(p *field.Path, r NetworkRequest) (int32, *v1alpha1.NetworkProfile, field.ErrorList) {
	var limits []string
	for _, prof := range s.profiles {
		pi := prof.Spec.PrimaryInterface
		if pi == nil {
			continue
		}
		if err := checkMTURange(&pi.MTU); err != nil {
			limits = append(limits, fmt.Sprintf("none (profile %q %s; an admin must fix it)", prof.Name, err))
			continue
		}
		lo, hi := mtuBounds(&pi.MTU)
		if r.MTU >= lo && r.MTU <= hi {
			return r.MTU, prof, nil
		}
		limits = append(limits, fmt.Sprintf("%d-%d (profile %q)", lo, hi, prof.Name))
	}
	if len(limits) == 0 {
		return 0, nil, field.ErrorList{field.Invalid(p.Child("mtu"), r.MTU, fmt.Sprintf("primary interface %s: no profile for namespace %q allows tuning it", PrimaryInterfaceName, s.namespace))}
	}
	return 0, nil, field.ErrorList{field.Invalid(p.Child("mtu"), r.MTU, fmt.Sprintf("primary interface %s: outside the allowed mtu %s", PrimaryInterfaceName, strings.Join(limits, ", ")))}
}

// claimOnly refuses an annotation's request for a hostDevice network
// offered through DRA: its NICs are devices the scheduler allocates, and
// a NIC the agent picked for an annotation could be one the scheduler
// has just allocated to a claim.
func claimOnly(p *field.Path, network string, o *offer, byClaim bool) *field.Error {
	if byClaim || o.network.HostDevice == nil || o.network.DRA == nil {
		return nil
	}
	classes := make([]string, 0, len(o.profiles))
	for _, prof := range o.profiles {
		if c, err := v1alpha1.DeviceClassName(prof.Name, network); err == nil {
			classes = append(classes, strconv.Quote(c))
		}
	}
	return field.Forbidden(p.Child("name"), fmt.Sprintf("network %q gives whole node NICs through DRA, which the scheduler hands out: ask for it with a ResourceClaim of device class %s, not by annotation", network, strings.Join(classes, " or ")))
}
