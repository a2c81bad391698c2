package policy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"podnet.io/podnet/api/v1alpha1"
)

// ClaimInput is everything a ResourceClaim's decision depends on.
type ClaimInput struct {
	// Namespace of the claim, with its labels.
	Namespace *corev1.Namespace
	// Claim as admitted: only spec.devices is read.
	Claim *resourcev1.ResourceClaim
	// Prepared is NewProfileSet of every NetworkProfile.
	Prepared *ProfileSet
}

// DecideClaim judges a ResourceClaim's podnet requests exactly as Decide
// judges a pod's annotation: it parses the claim (ParseClaim), writes the
// requests as the annotation they stand for (ClaimAnnotation) and calls
// Decide with the namespace and the same profiles. A claim that names no
// podnet device class asks for nothing: (nil, nil). Errors point into the
// claim (spec.devices.config[j].opaque.parameters.mtu,
// spec.devices.requests[i].exactly.deviceClassName) with Decide's limits.
//
// A claim runs as no service account: whichever pod of the namespace
// names it uses it. Profiles grant to namespaces, never to service
// accounts (see scope), so nothing narrower is lost; should a grant by
// service account ever exist, claims must be refused by it, never judged
// as some pod's. The approval therefore names no service account, and
// carries no RequestHash: approval.BindClaim binds it to the claim.
//
// The device class names a profile as well as a network: the scheduler
// allocates that profile's device, so the profile must be one that offers
// the network to the namespace.
func DecideClaim(in ClaimInput) (*v1alpha1.Approval, field.ErrorList) {
	if in.Claim == nil || in.Namespace == nil || in.Prepared == nil {
		return nil, field.ErrorList{field.InternalError(devicesPath, fmt.Errorf("claim policy input lacks the claim, its namespace or the profiles"))}
	}
	reqs, errs := ParseClaim(&in.Claim.Spec.Devices, in.Prepared.IsPodnetClass)
	if len(errs) > 0 || len(reqs) == 0 {
		return nil, errs
	}
	text, err := ClaimAnnotation(reqs)
	if err != nil {
		return nil, field.ErrorList{field.InternalError(devicesPath, err)}
	}
	// The pod Decide reads: the namespace and the request, nothing else.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: in.Namespace.Name,
		Annotations: map[string]string{v1alpha1.NetworksAnnotation: text}}}
	decided := Input{Namespace: in.Namespace, Pod: pod, Prepared: in.Prepared, byClaim: true}
	a, errs := Decide(decided)
	if len(errs) > 0 {
		return nil, claimErrors(errs, reqs)
	}
	if errs := checkClassProfiles(buildScope(decided), reqs); len(errs) > 0 {
		return nil, errs
	}
	a.ServiceAccount, a.RequestHash = "", ""
	return a, nil
}

// checkClassProfiles refuses a request whose device class belongs to a
// profile that does not offer its network to the namespace, even when
// another profile does: the device would be that profile's.
func checkClassProfiles(s scope, reqs []ClaimRequest) field.ErrorList {
	var errs field.ErrorList
	for _, r := range reqs {
		o := s.offers[r.Request.Name]
		if o != nil && slices.ContainsFunc(o.profiles, func(p *v1alpha1.NetworkProfile) bool { return p.Name == r.Profile }) {
			continue
		}
		errs = append(errs, field.Forbidden(r.Path.Child("exactly", "deviceClassName"),
			fmt.Sprintf("device class %q is network %q of profile %q, which does not offer it to namespace %q; %s", r.Class, r.Request.Name, r.Profile, s.namespace, s.describe())))
	}
	return errs
}

// claimErrors moves Decide's errors from the annotation the claim stands
// for to the claim's own fields: element i's name is its request's device
// class, its other fields are its config's parameters (or the request's,
// without a config), and the annotation as a whole is spec.devices.
func claimErrors(errs field.ErrorList, reqs []ClaimRequest) field.ErrorList {
	out := make(field.ErrorList, len(errs))
	base := annotationPath.String()
	for i, e := range errs {
		c := *e
		c.Field = claimField(strings.TrimPrefix(e.Field, base), e.Field != strings.TrimPrefix(e.Field, base), reqs)
		out[i] = &c
	}
	return out
}

// claimField maps the rest of an annotation path ("[2].mtu") to the claim.
func claimField(rest string, under bool, reqs []ClaimRequest) string {
	if !under {
		return rest
	}
	idx, tail, ok := strings.Cut(strings.TrimPrefix(rest, "["), "]")
	i, err := strconv.Atoi(idx)
	if !ok || !strings.HasPrefix(rest, "[") || err != nil || i < 0 || i >= len(reqs) {
		return devicesPath.String() + rest
	}
	r := reqs[i]
	switch {
	case tail == ".name":
		return r.Path.Child("exactly", "deviceClassName").String()
	case r.Params != nil:
		return r.Params.String() + tail
	default:
		return r.Path.String() + tail
	}
}
