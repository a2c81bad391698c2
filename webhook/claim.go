package webhook

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	sigsjson "sigs.k8s.io/json"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/approval"
	"podnet.io/podnet/pkg/policy"
)

// ClaimPath is where ResourceClaim CREATEs are served; the webhook
// configuration points the API server at it.
const ClaimPath = "/mutate-resource-v1-resourceclaim"

// ClaimHandler admits ResourceClaims that ask for podnet devices: it
// judges them with the profiles, namespaces, cache and key of the pod
// Handler it wraps, by the same decision (policy.DecideClaim calls
// policy.Decide), and signs the approval onto the claim. Only CREATE: a
// claim's spec never changes afterwards, and an UPDATE of its approval
// annotations is refused by the podnet-claim-approval admission policy.
type ClaimHandler struct {
	// Handler provides the reader, the signer, readiness and the clock.
	Handler *Handler
}

// newClaimWebhook serves ClaimHandler with controller-runtime's review
// decoding: claims are far fewer than pods, so the pod path's own decoder
// (reviewServer) is not needed here.
func newClaimWebhook(h *Handler) http.Handler {
	return &admission.Webhook{Handler: ClaimHandler{Handler: h}, RecoverPanic: ptr.To(true)}
}

// Handle implements admission.Handler.
func (c ClaimHandler) Handle(ctx context.Context, req admission.Request) admission.Response {
	start := time.Now()
	out := c.admit(ctx, req)
	c.Handler.Metrics.observeClaim(out.result, out.profiles, time.Since(start))
	return out.resp
}

// admit answers one request.
func (c ClaimHandler) admit(ctx context.Context, req admission.Request) outcome {
	if req.Kind.Group != resourcev1.GroupName || req.Kind.Kind != "ResourceClaim" || req.SubResource != "" || req.Operation != admissionv1.Create {
		return outcome{resp: admission.Allowed("podnet admits only resourceclaim CREATE here"), result: resultIgnored}
	}
	claim, err := decodeClaim(req.Object.Raw)
	if err != nil {
		return deny(fmt.Sprintf("podnet cannot read the resourceclaim in namespace %q: %v", req.Namespace, err))
	}
	switch claim.Namespace {
	case req.Namespace:
	case "":
		claim.Namespace = req.Namespace
	default:
		return deny(fmt.Sprintf("podnet: resourceclaim %s is in namespace %q, the request in %q", claimName(claim), claim.Namespace, req.Namespace))
	}
	if errs := validateClaimHasNoApproval(claim); len(errs) > 0 {
		return deny(claimRefusal(claim, "", errs))
	}
	return c.decide(ctx, claim, ptr.Deref(req.DryRun, false))
}

// decide judges a new claim and answers with its signed approval.
func (c ClaimHandler) decide(ctx context.Context, claim *resourcev1.ResourceClaim, dryRun bool) outcome {
	h := c.Handler
	if h.Ready != nil {
		if err := h.Ready(); err != nil {
			return errored(http.StatusServiceUnavailable, fmt.Errorf("podnet webhook not ready: %w", err))
		}
	}
	ns, err := h.getNamespace(ctx, claim.Namespace)
	if err != nil {
		return errored(http.StatusServiceUnavailable, err)
	}
	profiles, err := h.listProfiles(ctx)
	if err != nil {
		return errored(http.StatusServiceUnavailable, fmt.Errorf("list networkprofiles for resourceclaim %s: %w", claimName(claim), err))
	}
	appr, errs := policy.DecideClaim(policy.ClaimInput{Namespace: ns, Claim: claim, Prepared: profiles})
	switch {
	case len(errs) > 0:
		return deny(claimRefusal(claim, "networks refused: ", errs))
	case appr == nil:
		return outcome{resp: admission.Allowed("the resourceclaim asks for no podnet network"), result: resultNone}
	}
	payload, signature, err := c.sign(claim, appr, dryRun)
	if err != nil {
		return errored(http.StatusServiceUnavailable, err)
	}
	return outcome{resp: admission.Patched("", planApproval(claim.Annotations, payload, signature)...), result: resultApproved, profiles: profileNames(appr)}
}

// sign binds the approval to the new claim and signs it; a dry run shows
// the approval unsigned, as for pods, so that it mints nothing an agent
// accepts.
func (c ClaimHandler) sign(claim *resourcev1.ResourceClaim, appr *v1alpha1.Approval, dryRun bool) (payload, signature string, err error) {
	now := time.Now
	if c.Handler.Now != nil {
		now = c.Handler.Now
	}
	if err := approval.BindClaim(appr, claim); err != nil {
		return "", "", err
	}
	appr.IssuedAt = metav1.NewTime(now().UTC().Truncate(time.Second))
	if dryRun {
		b, err := approval.Encode(appr)
		if err != nil {
			return "", "", fmt.Errorf("dry run for resourceclaim %s: %w", claimName(claim), err)
		}
		return string(b), "", nil
	}
	payload, signature, err = approval.Sign(c.Handler.Signer, appr)
	if err != nil {
		return "", "", fmt.Errorf("sign approval for resourceclaim %s: %w", claimName(claim), err)
	}
	return payload, signature, nil
}

// validateClaimHasNoApproval refuses a new claim that carries an approval:
// only this webhook writes one, when it judges the claim, and one brought
// along was copied from another claim or forged.
func validateClaimHasNoApproval(claim *resourcev1.ResourceClaim) field.ErrorList {
	var errs field.ErrorList
	for _, k := range []string{v1alpha1.ApprovedAnnotation, v1alpha1.ApprovedSignatureAnnotation} {
		if v, ok := claim.Annotations[k]; ok {
			errs = append(errs, field.Forbidden(field.NewPath("metadata", "annotations").Key(k),
				fmt.Sprintf("set on a new resourceclaim (%s): only podnet's webhook writes it, for the claim it judged; remove it", shorten(v))))
		}
	}
	return errs
}

// claimRefusal is "resourceclaim NAME: " and lead, then one sentence per
// error.
func claimRefusal(claim *resourcev1.ResourceClaim, lead string, errs field.ErrorList) string {
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return "resourceclaim " + claimName(claim) + ": " + lead + strings.Join(msgs, "; ")
}

func decodeClaim(raw []byte) (*resourcev1.ResourceClaim, error) {
	if len(raw) == 0 {
		return nil, errors.New("the request carries no object")
	}
	claim := &resourcev1.ResourceClaim{}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, claim); err != nil {
		return nil, fmt.Errorf("decode resourceclaim: %w", err)
	}
	return claim, nil
}

// claimName names a claim for messages; a template's claim has only a
// generateName at CREATE.
func claimName(c *resourcev1.ResourceClaim) string {
	name := c.Name
	if name == "" {
		name = c.GenerateName + "*"
	}
	return c.Namespace + "/" + name
}
