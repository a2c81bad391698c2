package policy

import (
	"fmt"
	"strconv"
	"strings"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"podnet.io/podnet/api/v1alpha1"
)

// PodClaim is one entry of a new pod's spec.resourceClaims as the pod's
// admission reads it: the devices of the ResourceClaim or the
// ResourceClaimTemplate it names.
type PodClaim struct {
	// Source names the entry and what it names, for errors:
	// "spec.resourceClaims[0] (resourceclaimtemplate net)".
	Source string
	// Devices is the claim's (or the template's) spec.devices.
	Devices *resourcev1.DeviceClaim
}

// DecideWithClaims judges the networks a new pod gets both ways at once:
// its podnet.io/networks annotation and the podnet requests of the claims
// it names. Each claim is first judged as its own admission judges it
// (DecideClaim), which gives its interfaces their names; then every
// request, the annotation's first and the claims' after in the pod's
// order (the order the agent merges their approvals in), is decided as
// one request. So a profile's maxInterfaces, the interface names, the one
// default route, VRFs and the addresses count both ways, by the rules of
// ParseRequest and Decide.
//
// The approval it returns is signed by nobody: the pod carries Decide's,
// each claim DecideClaim's. The webhook reads it for what the pod as a
// whole must be (NET_RAW, the wait for every interface, privileges).
// (nil, nil) when neither way asks for a podnet network. Errors about a
// claim's request name the pod's entry and the claim's field.
func DecideWithClaims(in Input, claims []PodClaim) (*v1alpha1.Approval, field.ErrorList) {
	if in.Pod == nil || in.Namespace == nil || in.Prepared == nil {
		return nil, field.ErrorList{field.InternalError(annotationPath, fmt.Errorf("policy input lacks the pod, its namespace or the profiles"))}
	}
	var reqs []NetworkRequest
	if raw := in.Pod.Annotations[v1alpha1.NetworksAnnotation]; strings.TrimSpace(raw) != "" {
		own, errs := ParseRequest(raw)
		if len(errs) > 0 {
			return nil, errs
		}
		reqs = own
	}
	own := len(reqs)
	var parts []claimPart
	for _, c := range claims {
		got, errs := claimRequests(in, c)
		if len(errs) > 0 {
			return nil, errs
		}
		if len(got) > 0 {
			parts = append(parts, claimPart{claim: c, first: len(reqs), reqs: got})
			for _, r := range got {
				reqs = append(reqs, r.Request)
			}
		}
	}
	if len(parts) == 0 {
		// The annotation alone: Decide judged it.
		return nil, nil
	}
	if len(reqs) > maxRequests {
		return nil, podClaimErrors(tooManyRequests(len(reqs)), own, parts)
	}
	if errs := validateTogether(reqs, make([]bool, len(reqs))); len(errs) > 0 {
		return nil, podClaimErrors(errs, own, parts)
	}
	s := buildScope(in)
	s.claimsFrom = own
	if s.enabled {
		a, errs := s.decide(reqs)
		if len(errs) == 0 {
			return a, nil
		}
		return nil, podClaimErrors(errs, own, parts)
	}
	errs := append(s.adminHints(), field.Forbidden(annotationPath, s.describe()))
	return nil, podClaimErrors(errs, own, parts)
}

// claimPart is one claim's requests among the pod's, from index first.
type claimPart struct {
	claim PodClaim
	first int
	reqs  []ClaimRequest
}

// claimRequests are c's podnet requests with the interface names its own
// approval gives them, or the errors its own admission would refuse it
// with.
func claimRequests(in Input, c PodClaim) ([]ClaimRequest, field.ErrorList) {
	reqs, errs := ParseClaim(c.Devices, in.Prepared.IsPodnetClass)
	if len(errs) == 0 && len(reqs) == 0 {
		return nil, nil
	}
	var a *v1alpha1.Approval
	if len(errs) == 0 {
		claim := &resourcev1.ResourceClaim{Spec: resourcev1.ResourceClaimSpec{Devices: *c.Devices}}
		claim.Namespace = in.Namespace.Name
		a, errs = DecideClaim(ClaimInput{Namespace: in.Namespace, Claim: claim, Prepared: in.Prepared})
	}
	if len(errs) > 0 {
		return nil, underClaim(c, errs)
	}
	if len(a.Interfaces) != len(reqs) {
		return nil, field.ErrorList{field.InternalError(devicesPath, fmt.Errorf("%s: %d podnet requests approved as %d interfaces", c.Source, len(reqs), len(a.Interfaces)))}
	}
	for i := range reqs {
		reqs[i].Request.Interface = a.Interfaces[i].Interface
	}
	return reqs, nil
}

// underClaim names the pod's entry before each error about its claim.
func underClaim(c PodClaim, errs field.ErrorList) field.ErrorList {
	out := make(field.ErrorList, len(errs))
	for i, e := range errs {
		out[i] = withField(e, c.Source+" "+e.Field)
	}
	return out
}

// podClaimErrors moves the errors of the combined request to where the
// tenant wrote each element: the annotation's stay, a claim's go to the
// claim's field (claimErrors), named by the pod's entry. An error about
// the request as a whole names both ways when the pod used both.
func podClaimErrors(errs field.ErrorList, own int, parts []claimPart) field.ErrorList {
	base := annotationPath.String()
	out := make(field.ErrorList, 0, len(errs))
	for _, e := range errs {
		rest, under := strings.CutPrefix(e.Field, base)
		k, ok := elementIndex(rest)
		switch {
		case !under:
			out = append(out, e)
		case !ok && own == 0:
			out = append(out, withField(e, "spec.resourceClaims"+rest))
		case !ok:
			out = append(out, withField(e, "spec.resourceClaims and "+e.Field))
		case k < own:
			out = append(out, e)
		default:
			out = append(out, claimElementError(e, rest, k, parts)...)
		}
	}
	return out
}

// claimElementError moves an error about element k of the combined
// request to the claim that asked for it.
func claimElementError(e *field.Error, rest string, k int, parts []claimPart) field.ErrorList {
	for _, p := range parts {
		if k >= p.first && k < p.first+len(p.reqs) {
			local := "[" + strconv.Itoa(k-p.first) + "]" + rest[strings.Index(rest, "]")+1:]
			return underClaim(p.claim, claimErrors(field.ErrorList{withField(e, annotationPath.String()+local)}, p.reqs))
		}
	}
	return field.ErrorList{e}
}

// elementIndex reads the element index that starts the rest of an
// annotation path ("[2].mtu" is 2).
func elementIndex(rest string) (int, bool) {
	idx, _, ok := strings.Cut(strings.TrimPrefix(rest, "["), "]")
	if !ok || !strings.HasPrefix(rest, "[") {
		return 0, false
	}
	k, err := strconv.Atoi(idx)
	return k, err == nil && k >= 0
}

func withField(e *field.Error, f string) *field.Error {
	moved := *e
	moved.Field = f
	return &moved
}
