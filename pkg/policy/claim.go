package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"podnet.io/podnet/api/v1alpha1"
)

// devicesPath is the root of every error about a ResourceClaim's request,
// so that a denial points at the field of the claim the tenant wrote.
var devicesPath = field.NewPath("spec", "devices")

// ClaimRequest is one podnet request of a ResourceClaim, read as the
// element of the podnet.io/networks annotation it stands for.
type ClaimRequest struct {
	// Request is the element: Name is the network of the device class,
	// the other fields come from the request's opaque config.
	Request NetworkRequest
	// Class is the request's device class, DeviceClassName(Profile,
	// Request.Name).
	Class string
	// Profile is the NetworkProfile the device class belongs to.
	Profile string
	// Path is the request in the claim (spec.devices.requests[i]).
	Path *field.Path
	// Params is the opaque parameters of its config
	// (spec.devices.config[j].opaque.parameters); nil when the request has
	// no podnet config and asks for the network's defaults.
	Params *field.Path
}

// ParseClaim turns a ResourceClaim's spec.devices into the podnet
// requests it makes, in request order. isPodnet tells a podnet device
// class from another driver's: requests naming other classes are left to
// their drivers and not read. It is strict, as ParseRequest is: a podnet
// request must be an exactly request for one device (count 1, allocation
// mode ExactCount, no admin access, no capacity), and a podnet.io opaque
// config must name exactly one podnet request and hold one element of the
// annotation's JSON form without name and namespace (the class names the
// network; the claim's namespace is the network's), with no unknown
// field. A podnet class inside firstAvailable is refused: an approval
// must say which network the pod gets before the scheduler picks one
// alternative, and approving every alternative would grant what the
// claim does not end up using. Errors name the field of the claim and the
// limit. The fields' values are checked by Decide, as the annotation's
// are.
func ParseClaim(devices *resourcev1.DeviceClaim, isPodnet func(class string) bool) ([]ClaimRequest, field.ErrorList) {
	var errs field.ErrorList
	var reqs []ClaimRequest
	byName := map[string]int{}
	classOf := map[string]string{}
	for i, r := range devices.Requests {
		p := devicesPath.Child("requests").Index(i)
		classOf[r.Name] = "of a firstAvailable request"
		if r.Exactly != nil {
			classOf[r.Name] = fmt.Sprintf("%q", r.Exactly.DeviceClassName)
		}
		for k, sub := range r.FirstAvailable {
			if isPodnet(sub.DeviceClassName) {
				errs = append(errs, field.Forbidden(p.Child("firstAvailable").Index(k).Child("deviceClassName"),
					fmt.Sprintf("device class %q is a podnet network's: podnet networks are asked for with exactly, one network per request; an approval must say which network the pod gets before the scheduler picks an alternative", sub.DeviceClassName)))
			}
		}
		if r.Exactly == nil || !isPodnet(r.Exactly.DeviceClassName) {
			continue
		}
		cr, e := parseClaimRequest(p, r.Exactly)
		errs = append(errs, e...)
		byName[r.Name] = len(reqs)
		reqs = append(reqs, cr)
	}
	for j, c := range devices.Config {
		if c.Opaque == nil || c.Opaque.Driver != v1alpha1.DRADriver {
			continue
		}
		errs = append(errs, bindClaimConfig(devicesPath.Child("config").Index(j), c, reqs, byName, classOf)...)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	if len(reqs) > maxRequests {
		return nil, field.ErrorList{field.TooMany(devicesPath.Child("requests"), len(reqs), maxRequests)}
	}
	return reqs, nil
}

// parseClaimRequest checks one exactly request naming a podnet class: one
// request is one interface.
func parseClaimRequest(p *field.Path, r *resourcev1.ExactDeviceRequest) (ClaimRequest, field.ErrorList) {
	profile, network, _ := v1alpha1.ParseDeviceClassName(r.DeviceClassName)
	cr := ClaimRequest{Request: NetworkRequest{Name: network}, Class: r.DeviceClassName, Profile: profile, Path: p}
	ep := p.Child("exactly")
	var errs field.ErrorList
	if r.AllocationMode != "" && r.AllocationMode != resourcev1.DeviceAllocationModeExactCount {
		errs = append(errs, field.NotSupported(ep.Child("allocationMode"), r.AllocationMode, []string{string(resourcev1.DeviceAllocationModeExactCount)}))
	}
	if r.Count > 1 {
		errs = append(errs, field.Invalid(ep.Child("count"), r.Count, fmt.Sprintf("network %q: a podnet request is one interface, so its count is at most 1; ask for another interface with another request", network)))
	}
	if r.AdminAccess != nil && *r.AdminAccess {
		errs = append(errs, field.Forbidden(ep.Child("adminAccess"), fmt.Sprintf("network %q: podnet devices are interfaces of one pod; admin access to them is not offered", network)))
	}
	if r.Capacity != nil {
		errs = append(errs, field.Forbidden(ep.Child("capacity"), fmt.Sprintf("network %q: podnet devices publish no consumable capacity", network)))
	}
	return cr, errs
}

// bindClaimConfig reads one podnet.io config into the one podnet request
// it names.
func bindClaimConfig(p *field.Path, c resourcev1.DeviceClaimConfiguration, reqs []ClaimRequest, byName map[string]int, classOf map[string]string) field.ErrorList {
	rp := p.Child("requests")
	switch {
	case len(c.Requests) == 0:
		return field.ErrorList{field.Required(rp, "a podnet.io config must name the one podnet request it configures: without requests it would apply to every request of the claim")}
	case len(c.Requests) > 1:
		return field.ErrorList{field.Invalid(rp, c.Requests, fmt.Sprintf("a podnet.io config configures one request, one interface, and names %d: write one config per request", len(c.Requests)))}
	}
	name := c.Requests[0]
	i, ok := byName[name]
	switch {
	case strings.Contains(name, "/"):
		return field.ErrorList{field.Forbidden(rp.Index(0), fmt.Sprintf("%q names a subrequest: podnet networks are asked for with exactly, not firstAvailable", name))}
	case !ok && classOf[name] != "":
		return field.ErrorList{field.Invalid(rp.Index(0), name, fmt.Sprintf("request %q names device class %s, which is not a podnet network's device class (<network>.<profile> of a NetworkProfile): a podnet.io config configures a podnet request only", name, classOf[name]))}
	case !ok:
		return field.ErrorList{field.NotFound(rp.Index(0), name)}
	case reqs[i].Params != nil:
		return field.ErrorList{field.Duplicate(rp.Index(0), name)}
	}
	params := p.Child("opaque", "parameters")
	reqs[i].Params = params
	return parseClaimParams(params, c.Opaque.Parameters.Raw, &reqs[i].Request)
}

// parseClaimParams decodes the opaque parameters into r, keeping r.Name.
func parseClaimParams(p *field.Path, raw []byte, r *NetworkRequest) field.ErrorList {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil || keys == nil {
		return field.ErrorList{field.Invalid(p, shortText(raw), "not a JSON object: one element of the podnet.io/networks JSON form without name and namespace")}
	}
	var errs field.ErrorList
	for _, k := range []string{"name", "namespace"} {
		if _, set := keys[k]; set {
			errs = append(errs, field.Forbidden(p.Child(k), "the device class names the network, and a claim asks in its own namespace: leave name and namespace out"))
		}
	}
	if len(errs) > 0 {
		return errs
	}
	network := r.Name
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(r); err != nil {
		if k, ok := unknownField(err); ok {
			return field.ErrorList{field.Invalid(p.Child(k), shortText(keys[k]), fmt.Sprintf("network %q: unknown field: the parameters take the fields of one element of the podnet.io/networks JSON form", network))}
		}
		return field.ErrorList{field.Invalid(p, shortText(raw), fmt.Sprintf("network %q: %v", network, err))}
	}
	r.Name = network
	return nil
}

// unknownField returns the name in encoding/json's unknown-field error.
func unknownField(err error) (string, bool) {
	rest, ok := strings.CutPrefix(err.Error(), "json: unknown field ")
	if !ok {
		return "", false
	}
	name, uerr := strconv.Unquote(rest)
	return name, uerr == nil
}

// shortText keeps denials readable when a tenant pastes a large value.
func shortText(b []byte) string {
	const max = 120
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}

// ClaimAnnotation is the podnet.io/networks annotation the claim's
// requests stand for: the JSON list of their elements, in request order.
// Decide judges a claim by it, so a claim and a pod asking for the same
// are judged alike.
func ClaimAnnotation(reqs []ClaimRequest) (string, error) {
	elems := make([]NetworkRequest, len(reqs))
	for i := range reqs {
		elems[i] = reqs[i].Request
	}
	b, err := json.Marshal(elems)
	if err != nil {
		return "", fmt.Errorf("encode the claim's podnet requests: %w", err)
	}
	return string(b), nil
}

// IsPodnetClass reports whether a device class is one the controller keeps
// for a profile network: a DeviceClassName whose profile is in the set.
// A class of another driver that happens to have the same form is judged
// as podnet's only when its second part names a NetworkProfile.
func (s *ProfileSet) IsPodnetClass(class string) bool {
	profile, _, ok := v1alpha1.ParseDeviceClassName(class)
	if !ok {
		return false
	}
	i := sort.Search(len(s.profiles), func(i int) bool { return s.profiles[i].Name >= profile })
	return i < len(s.profiles) && s.profiles[i].Name == profile
}
