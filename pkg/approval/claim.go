package approval

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"podnet.io/podnet/api/v1alpha1"
)

// claimText is the podnet part of a ResourceClaim's spec.devices, the text
// a claim's approval answers.
type claimText struct {
	Requests []resourcev1.DeviceRequest            `json:"requests"`
	Config   []resourcev1.DeviceClaimConfiguration `json:"config"`
}

// ClaimRequestText is the canonical text of what a ResourceClaim asks of
// podnet, whose hash its approval carries (RequestHash): the JSON
// {"requests":[…],"config":[…]} of every request of spec.devices.requests
// that may name a podnet device class (its exactly.deviceClassName, or a
// firstAvailable alternative's, has the form of v1alpha1.DeviceClassName)
// and every config whose opaque driver is podnet.io, in the claim's order,
// each as resource.k8s.io/v1 writes it, the opaque parameters with their
// object keys sorted. It needs no profile to tell podnet's requests, so the
// agent computes it from the claim alone; another driver's request of that
// form is bound too, which only narrows. A claim's spec cannot change
// after CREATE, so the text changes only if the claim is replaced.
func ClaimRequestText(devices *resourcev1.DeviceClaim) (string, error) {
	t := claimText{Requests: []resourcev1.DeviceRequest{}, Config: []resourcev1.DeviceClaimConfiguration{}}
	for _, r := range devices.Requests {
		if mayBePodnet(r) {
			t.Requests = append(t.Requests, r)
		}
	}
	for _, c := range devices.Config {
		if c.Opaque == nil || c.Opaque.Driver != v1alpha1.DRADriver {
			continue
		}
		c.Opaque = c.Opaque.DeepCopy()
		c.Opaque.Parameters = runtime.RawExtension{Raw: sortedJSON(c.Opaque.Parameters.Raw)}
		t.Config = append(t.Config, c)
	}
	b, err := json.Marshal(t)
	if err != nil {
		return "", fmt.Errorf("encode the claim's podnet requests: %w", err)
	}
	return string(b), nil
}

// mayBePodnet reports whether a request names a device class of
// DeviceClassName's form.
func mayBePodnet(r resourcev1.DeviceRequest) bool {
	if r.Exactly != nil {
		if _, _, ok := v1alpha1.ParseDeviceClassName(r.Exactly.DeviceClassName); ok {
			return true
		}
	}
	for _, s := range r.FirstAvailable {
		if _, _, ok := v1alpha1.ParseDeviceClassName(s.DeviceClassName); ok {
			return true
		}
	}
	return false
}

// sortedJSON re-encodes a JSON value with its object keys sorted and its
// numbers as written, so that the text does not depend on how the API
// server or a client spaced or ordered the parameters. A value that is not
// JSON (which the webhook refuses) is kept as it is.
func sortedJSON(raw []byte) []byte {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return raw
	}
	b, err := json.Marshal(v)
	if err != nil {
		return raw
	}
	return b
}

// ClaimRequestHash is the RequestHash of a ResourceClaim's approval.
func ClaimRequestHash(claim *resourcev1.ResourceClaim) (string, error) {
	text, err := ClaimRequestText(&claim.Spec.Devices)
	if err != nil {
		return "", fmt.Errorf("claim %s: %w", claimName(claim), err)
	}
	return HashRequest(text), nil
}

// BindClaim makes a decided approval the approval of a new claim: for it
// (ResourceClaim), for its podnet request text (RequestHash) and for no
// service account. The webhook signs the result with IssuedAt set.
func BindClaim(a *v1alpha1.Approval, claim *resourcev1.ResourceClaim) error {
	hash, err := ClaimRequestHash(claim)
	if err != nil {
		return err
	}
	a.ResourceClaim, a.ServiceAccount, a.RequestHash, a.PodUID = true, "", hash, ""
	return nil
}

// CheckClaimBinding refuses an approval that is not a claim's, was issued
// for another namespace or another podnet request text, or for a claim
// created outside the issue window (IssueWindow, MaxClockSkew, as for
// pods), so that a signed approval copied onto another claim (in another
// namespace, or replayed later) grants nothing.
func CheckClaimBinding(a *v1alpha1.Approval, claim *resourcev1.ResourceClaim) error {
	key := claimName(claim)
	hash, err := ClaimRequestHash(claim)
	if err != nil {
		return err
	}
	switch {
	case !a.ResourceClaim:
		return fmt.Errorf("approval on resourceclaim %s was issued for a pod, not a claim", key)
	case a.Namespace != claim.Namespace:
		return fmt.Errorf("approval on resourceclaim %s was issued for namespace %q", key, a.Namespace)
	case a.ServiceAccount != "" || a.PodUID != "":
		return fmt.Errorf("approval on resourceclaim %s names a service account or pod, which a claim's never does", key)
	case a.RequestHash != hash:
		return fmt.Errorf("approval on resourceclaim %s answers other podnet requests than the claim's", key)
	}
	issued, created := a.IssuedAt.Time, claim.CreationTimestamp.Time
	if created.IsZero() {
		return fmt.Errorf("approval on resourceclaim %s: the claim has no creationTimestamp to check the approval's issue time against", key)
	}
	if created.Before(issued.Add(-MaxClockSkew)) || created.After(issued.Add(IssueWindow)) {
		return fmt.Errorf("approval on resourceclaim %s was issued at %s for a claim created within %s after it, the claim was created at %s: an approval is valid only for the claim it was issued to",
			key, issued.UTC().Format(time.RFC3339), IssueWindow, created.UTC().Format(time.RFC3339))
	}
	return nil
}

// VerifyClaim is what the agent's kubelet plugin does with a claim before
// it prepares a podnet device: read the two annotations, verify the
// signature with the trusted keys, decode, and check the binding. Unlike
// VerifyPod, a claim without an approval is an error: every podnet device
// of a claim needs one (a claim in a namespace not opted in never gets
// one).
func VerifyClaim(v Verifier, claim *resourcev1.ResourceClaim) (*v1alpha1.Approval, error) {
	key := claimName(claim)
	payload, hasPayload := claim.Annotations[v1alpha1.ApprovedAnnotation]
	sig, hasSig := claim.Annotations[v1alpha1.ApprovedSignatureAnnotation]
	if !hasPayload || !hasSig {
		return nil, fmt.Errorf("resourceclaim %s has no podnet approval (%s and %s): podnet's webhook approves claims in namespaces labelled %s=true only, when they are created",
			key, v1alpha1.ApprovedAnnotation, v1alpha1.ApprovedSignatureAnnotation, v1alpha1.EnabledLabel)
	}
	a, err := Verify(v, payload, sig)
	if err != nil {
		return nil, fmt.Errorf("resourceclaim %s: %w", key, err)
	}
	if err := CheckClaimBinding(a, claim); err != nil {
		return nil, err
	}
	return a, nil
}

// claimName names a claim for messages; on CREATE a generated name does
// not exist yet.
func claimName(c *resourcev1.ResourceClaim) string {
	name := c.Name
	if name == "" {
		name = c.GenerateName + "*"
	}
	return c.Namespace + "/" + name
}
