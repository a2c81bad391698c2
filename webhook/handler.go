package webhook

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	sigsjson "sigs.k8s.io/json"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/approval"
	"podnet.io/podnet/pkg/nsmeta"
	"podnet.io/podnet/pkg/policy"
)

// Path is where the handler is served; the webhook configuration points
// the API server at it.
const Path = "/mutate-v1-pod"

// Handler admits pods that ask for networks. Handle is safe for concurrent
// use and has no side effects. A dry-run request is judged like any other
// but gets no signature: a signed approval minted by a dry run would be a
// token the tenant could keep.
type Handler struct {
	// Reader reads Namespaces and NetworkProfiles. In the binary it is the
	// manager's informer cache, never a live client: admission must not
	// cost API server round trips.
	Reader client.Reader
	// Signer signs approvals.
	Signer approval.Signer
	// Ready, when not nil, must return nil before a request is answered:
	// a decision from a cache that has not synced could deny what a profile
	// allows.
	Ready func() error
	// Wait configures the injected init container.
	Wait WaitOptions
	// Hold is how new pods with networks are kept from running their app
	// before the networks exist (see holdChange); empty means
	// HoldWaitInitContainer. The readiness gate is added in every mode.
	Hold v1alpha1.HoldMode
	// NRITolerate are the annotation keys the runtimes' NRI default
	// validator reads to let a pod run without its required plugins
	// (tolerate_missing_plugins_annotation), as the admin configured
	// them: a pod that gets networks may not carry one (validateTolerate).
	NRITolerate []string
	// AutoHold is the cluster's current choice when Hold is
	// v1alpha1.HoldAuto; nil means the wait init container.
	AutoHold func() v1alpha1.HoldMode
	// Metrics, when not nil, counts decisions and their latency.
	Metrics *Metrics
	// Now is the clock approvals are stamped with; nil means time.Now.
	Now func() time.Time
	// NamespaceWait is how long to wait for a namespace to reach the cache
	// before giving up; zero means defaultNamespaceWait.
	NamespaceWait time.Duration
	// Claims reads the ResourceClaims and ResourceClaimTemplates a new pod
	// names (podClaims): a live reader, not the cache.
	Claims client.Reader
	// MultusRequests reads Multus' k8s.v1.cni.cncf.io/networks as a podnet
	// request on pods that carry no podnet.io/networks (translateMultus).
	MultusRequests bool

	// profiles, when not nil, serves the profiles instead of a List of
	// Reader on every admission (see profileSnapshot).
	profiles *profileSnapshot
}

// defaultNamespaceWait covers the usual race of one `kubectl apply` that
// creates a namespace and its pods: the informer sees the namespace a few
// milliseconds after the API server admits it.
const defaultNamespaceWait = 2 * time.Second

// Decision results, the "result" label of the metrics.
const (
	resultApproved = "approved" // the request was approved and signed
	resultDenied   = "denied"   // the request was refused
	resultNone     = "none"     // no request: any approval is removed
	resultRevoked  = "revoked"  // UPDATE of an unchanged request no longer granted: approval removed
	resultIgnored  = "ignored"  // not a pod CREATE or UPDATE
	resultError    = "error"    // the webhook could not decide (cache, key)
)

// outcome is one admission's answer and what the metrics record of it.
type outcome struct {
	resp     admission.Response
	result   string
	profiles []string
}

// Handle implements admission.Handler.
func (h *Handler) Handle(ctx context.Context, req admission.Request) admission.Response {
	return h.handle(ctx, req, decoded{})
}

// handle is Handle for a request whose pods may already be decoded (see
// reviewServer).
func (h *Handler) handle(ctx context.Context, req admission.Request, d decoded) admission.Response {
	start := time.Now()
	out := h.admit(ctx, req, d)
	h.Metrics.observe(string(req.Operation), out.result, out.profiles, time.Since(start))
	return out.resp
}

// decoded holds the pods of a request that were decoded with the
// AdmissionReview, so that admission does not decode them a second time;
// a nil pod is decoded from the request.
type decoded struct {
	pod, old *corev1.Pod
}

func (d decoded) object(req admission.Request) (*corev1.Pod, error) {
	if d.pod != nil {
		return d.pod, nil
	}
	return decodePod(req.Object.Raw)
}

func (d decoded) oldObject(req admission.Request) (*corev1.Pod, error) {
	if d.old != nil {
		return d.old, nil
	}
	return decodePod(req.OldObject.Raw)
}

// admit answers one request: it decodes the pod once (unless the review
// already did), reads a request written for Multus as podnet's own
// (translateMultus) when MultusRequests is on, and decides.
func (h *Handler) admit(ctx context.Context, req admission.Request, d decoded) outcome {
	if req.Kind.Group != "" || req.Kind.Kind != "Pod" || req.SubResource != "" ||
		(req.Operation != admissionv1.Create && req.Operation != admissionv1.Update) {
		return outcome{resp: admission.Allowed("podnet admits only pod CREATE and UPDATE"), result: resultIgnored}
	}
	pod, err := d.object(req)
	if err != nil {
		return deny(fmt.Sprintf("podnet cannot read the pod in namespace %q: %v", req.Namespace, err))
	}
	if !h.MultusRequests {
		return h.decide(ctx, req, d, pod)
	}
	request, copied, err := translateMultus(pod)
	switch {
	case err != nil:
		return deny(err.Error())
	case !copied:
		return h.decide(ctx, req, d, pod)
	}
	// The pod is judged as admitted: with the copy.
	pod.Annotations[v1alpha1.NetworksAnnotation] = request
	return readFromMultus(h.decide(ctx, req, d, pod), request)
}

// decide judges a decoded pod CREATE or UPDATE: what the request changes
// (validateChange, pure), its networks against the profiles (judge), and
// the pod as admitted against the approval it would get (shape, pure but
// for the placement's slices). Only the API reads and the signing are the
// handler's own.
func (h *Handler) decide(ctx context.Context, req admission.Request, d decoded, pod *corev1.Pod) outcome {
	if pod.Namespace == "" {
		// On CREATE the namespace may be only in the request URL.
		pod.Namespace = req.Namespace
	}
	var old *corev1.Pod
	if req.Operation == admissionv1.Update {
		var err error
		if old, err = d.oldObject(req); err != nil {
			return deny(fmt.Sprintf("podnet cannot read the old pod %s: %v", podName(pod), err))
		}
	}
	if why := validateChange(req.Namespace, old, pod); why != "" {
		return deny(why)
	}
	create := old == nil
	// A new pod carries no network status: only the agent writes it, once
	// it attached this very pod.
	base := podChange{RemoveStatus: create}
	j, out := h.judge(ctx, old, pod)
	if out != nil {
		return *out
	}
	if j.whole == nil {
		// It asks for nothing (a blank request, claims of other drivers
		// only): it carries no approval, whoever wrote it.
		return patched(pod, base, resultNone, nil)
	}
	if errs := validateTolerate(old, pod, h.NRITolerate); len(errs) > 0 {
		return deny(fmt.Sprintf("pod %s: %v", podName(pod), errs.ToAggregate()))
	}
	change, out := h.shape(j, pod, create)
	if out != nil {
		return *out
	}
	change.RemoveStatus = base.RemoveStatus
	if j.appr != nil {
		signed, err := h.signed(pod, j.appr, create, ptr.Deref(req.DryRun, false))
		if err != nil {
			return errored(http.StatusServiceUnavailable, err)
		}
		change.Approval, change.Signature = signed.Approval, signed.Signature
	}
	return patched(pod, change, resultApproved, profileNames(j.whole))
}

// validateChange checks what a request changes before anything is read: a
// pod in the request's namespace; on CREATE (old is nil) one podnet may
// inject into, whose approval annotations are not forged ahead of a
// request and whose NRI annotations are podnet's; on UPDATE podnet's own
// annotations as they were. It returns the denial, "" when the change is
// valid.
func validateChange(namespace string, old, pod *corev1.Pod) string {
	if pod.Namespace != namespace {
		return fmt.Sprintf("podnet: pod %s is in namespace %q, the request in %q", podName(pod), pod.Namespace, namespace)
	}
	var errs field.ErrorList
	if old == nil {
		errs = slices.Concat(validatePodForInjection(pod), validateApprovalHasRequest(pod), validateNRIAnnotations(pod))
	} else {
		errs = append(validateOwnAnnotationsUnchanged(old, pod), validateNRIAnnotationsUnchanged(old, pod)...)
	}
	if len(errs) > 0 {
		return fmt.Sprintf("pod %s: %v", podName(pod), errs.ToAggregate())
	}
	return ""
}

// judgement is what judge found: the input it judged, the approval of the
// pod's annotation (nil when it asks for none; the only part signed), and
// every network the pod gets, its annotation's and its claims' (nil when
// none). unchanged says an UPDATE left the request as it was, so that a
// denial revokes rather than refuses.
type judgement struct {
	in          policy.Input
	appr, whole *v1alpha1.Approval
	unchanged   bool
}

// judge reads what the decision needs and judges the pod's request and, on
// CREATE, its resource claims against the profiles. A non-nil outcome ends
// the review.
func (h *Handler) judge(ctx context.Context, old, pod *corev1.Pod) (judgement, *outcome) {
	create := old == nil
	request, asks := pod.Annotations[v1alpha1.NetworksAnnotation]
	// Claims are read only on CREATE: a pod's spec.resourceClaims never
	// changes, and the agent re-judges its claims' grants as it runs.
	claims := create && len(pod.Spec.ResourceClaims) > 0
	if !asks && !claims {
		return judgement{}, nil
	}
	if h.Ready != nil {
		if err := h.Ready(); err != nil {
			out := errored(http.StatusServiceUnavailable, fmt.Errorf("podnet webhook not ready: %w", err))
			return judgement{}, &out
		}
	}
	in, err := h.gatherInput(ctx, pod)
	if err != nil {
		out := errored(http.StatusServiceUnavailable, err)
		return judgement{}, &out
	}
	j := judgement{in: in, unchanged: !create && old.Annotations[v1alpha1.NetworksAnnotation] == request}
	if asks {
		var errs field.ErrorList
		j.appr, errs = policy.Decide(in)
		if len(errs) > 0 {
			out := deny(denialMessage(pod, errs))
			if j.unchanged {
				out = revokedOnUpdate(pod, denialMessage(pod, errs))
			}
			return judgement{}, &out
		}
	}
	j.whole = j.appr
	if claims {
		var out *outcome
		if j.whole, out = h.withClaims(ctx, in, j.appr); out != nil {
			return judgement{}, out
		}
	}
	return j, nil
}

// shape is the pod as it must be admitted for every network it gets: the
// spec change (specChange), a new pod's placement, and the check that the
// pod as admitted may get the approval (the agent checks the same before
// it attaches). A non-nil outcome ends the review.
func (h *Handler) shape(j judgement, pod *corev1.Pod, create bool) (podChange, *outcome) {
	change := h.specChange(pod, j.whole, create)
	if create && j.appr != nil {
		// A claim's device is placed by the scheduler, from the slices.
		var err error
		if change.Affinity, err = placement(j.in.Prepared, pod, j.appr); err != nil {
			out := deny(fmt.Sprintf("podnet: pod %s: %v", podName(pod), err))
			return change, &out
		}
	}
	if errs := admittedPrivilege(pod, change, j.whole); len(errs) > 0 {
		out := deny(privilegeDenial(pod, errs, create))
		if j.unchanged {
			out = revokedOnUpdate(pod, privilegeDenial(pod, errs, create))
		}
		return change, &out
	}
	return change, nil
}

// withClaims is every network a new pod gets: its annotation's approval
// appr (nil when it asks for none) and its claims' requests, judged
// together (policy.DecideWithClaims). The result is never signed.
func (h *Handler) withClaims(ctx context.Context, in policy.Input, appr *v1alpha1.Approval) (*v1alpha1.Approval, *outcome) {
	found, out := h.podClaims(ctx, in.Pod)
	if out != nil {
		return nil, out
	}
	whole, errs := policy.DecideWithClaims(in, found)
	if len(errs) > 0 {
		o := deny(denialMessage(in.Pod, errs))
		return nil, &o
	}
	if whole == nil {
		return appr, nil
	}
	return whole, nil
}

// revokedOnUpdate answers an UPDATE that did not change the request of a
// pod no longer granted it: a profile changed. Denying would wedge the
// pod: no label, finalizer or status annotation could be written any
// more, not even while it terminates. The approval goes instead, and the
// agent detaches.
func revokedOnUpdate(pod *corev1.Pod, why string) outcome {
	out := patched(pod, podChange{}, resultRevoked, nil)
	out.resp = out.resp.WithWarnings(why + " The approval was removed.")
	return out
}

// specChange is what a CREATE changes in the spec of a pod that gets
// approval appr: the readiness gate, NET_RAW dropped unless every network
// allows raw sockets, and the wait container. An UPDATE changes no spec:
// the API server forbids it.
func (h *Handler) specChange(pod *corev1.Pod, appr *v1alpha1.Approval, create bool) podChange {
	if !create {
		return podChange{}
	}
	change := podChange{ReadinessGate: true, DropNetRaw: !policy.RawSocketsAllowed(appr)}
	if ifaces := interfaceNames(appr); len(ifaces) > 0 {
		h.holdChange(&change, pod, ifaces)
	}
	return change
}

// signed returns the approval annotations the pod must carry: the
// approval already on it when that is this webhook's own and grants the
// same (so a second pass changes nothing), the approval unsigned for a dry
// run, and a fresh signature otherwise, stamped with the time and, on
// UPDATE, the pod's UID. A dry run shows the tenant what it would get
// (kubectl podnet can-i reads it) but mints nothing an agent accepts: the
// agent applies only signed approvals.
func (h *Handler) signed(pod *corev1.Pod, appr *v1alpha1.Approval, create, dryRun bool) (podChange, error) {
	now := time.Now
	if h.Now != nil {
		now = h.Now
	}
	t := now()
	if dryRun {
		shown := *appr
		shown.IssuedAt = metav1.NewTime(t.UTC().Truncate(time.Second))
		payload, err := approval.Encode(&shown)
		if err != nil {
			return podChange{}, fmt.Errorf("dry run for pod %s: %w", podName(pod), err)
		}
		return podChange{Approval: string(payload)}, nil
	}
	if approval.Reusable(ownApproval(h.Signer, pod), appr, pod, create, t) {
		return podChange{Approval: pod.Annotations[v1alpha1.ApprovedAnnotation], Signature: pod.Annotations[v1alpha1.ApprovedSignatureAnnotation]}, nil
	}
	fresh := *appr
	fresh.IssuedAt = metav1.NewTime(t.UTC().Truncate(time.Second))
	if !create {
		fresh.PodUID = string(pod.UID)
	}
	payload, signature, err := approval.Sign(h.Signer, &fresh)
	if err != nil {
		return podChange{}, fmt.Errorf("sign approval for pod %s: %w", podName(pod), err)
	}
	return podChange{Approval: payload, Signature: signature}, nil
}

// ownApproval returns the approval on the pod when this webhook's current
// key signed it, and nil otherwise (none, forged, or an older key's, which
// a rotation replaces on the pod's next UPDATE).
func ownApproval(s approval.Signer, pod *corev1.Pod) *v1alpha1.Approval {
	if pod.Annotations[v1alpha1.ApprovedSignatureAnnotation] == "" {
		// Nothing signed it: the common CREATE needs no key at all.
		return nil
	}
	a, err := approval.Verify(approval.SignerKeys{Signer: s}, pod.Annotations[v1alpha1.ApprovedAnnotation], pod.Annotations[v1alpha1.ApprovedSignatureAnnotation])
	if err != nil {
		return nil
	}
	return a
}

// gatherInput reads the pod's namespace and every profile from the cache.
func (h *Handler) gatherInput(ctx context.Context, pod *corev1.Pod) (policy.Input, error) {
	ns, err := h.getNamespace(ctx, pod.Namespace)
	if err != nil {
		return policy.Input{}, err
	}
	profiles, err := h.listProfiles(ctx)
	if err != nil {
		return policy.Input{}, fmt.Errorf("list networkprofiles for pod %s: %w", podName(pod), err)
	}
	return policy.Input{Namespace: ns, Pod: pod, Prepared: profiles}, nil
}

// listProfiles returns every profile prepared for decisions, from the
// snapshot when there is one.
func (h *Handler) listProfiles(ctx context.Context) (*policy.ProfileSet, error) {
	if h.profiles != nil {
		return h.profiles.list(ctx)
	}
	var profiles v1alpha1.NetworkProfileList
	// The cache's objects are shared, not copied: policy only reads them.
	if err := h.Reader.List(ctx, &profiles, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	return policy.NewProfileSet(profiles.Items), nil
}

// getNamespace waits briefly for a namespace the cache has not seen yet:
// the API server only calls the webhook for opted-in namespaces, so a miss
// means the informer is a few milliseconds behind.
func (h *Handler) getNamespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	wait := h.NamespaceWait
	if wait == 0 {
		wait = defaultNamespaceWait
	}
	deadline := time.Now().Add(wait)
	for {
		meta := nsmeta.Object()
		err := h.Reader.Get(ctx, client.ObjectKey{Name: name}, meta, client.UnsafeDisableDeepCopy)
		if err == nil {
			// Policy reads only the name and labels.
			return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: meta.Name, Labels: meta.Labels}}, nil
		}
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("get namespace %q: %w", name, err)
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("namespace %q is not in the webhook's cache of opted-in namespaces (label %s=true)", name, v1alpha1.EnabledLabel)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("get namespace %q: %w", name, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// validatePodForInjection refuses a CREATE that the injection would turn
// into an invalid pod, with a message about the pod rather than about the
// patch.
func validatePodForInjection(pod *corev1.Pod) field.ErrorList {
	var errs field.ErrorList
	if v, ok := pod.Annotations[v1alpha1.WaitAnnotation]; ok && v != "true" && v != "false" {
		errs = append(errs, field.NotSupported(field.NewPath("metadata", "annotations").Key(v1alpha1.WaitAnnotation), v, []string{"true", "false"}))
	}
	for i, c := range pod.Spec.Containers {
		if c.Name == v1alpha1.WaitContainerName {
			errs = append(errs, field.Invalid(field.NewPath("spec", "containers").Index(i).Child("name"), c.Name, "the name is reserved for podnet's init container"))
		}
	}
	return errs
}

func decodePod(raw []byte) (*corev1.Pod, error) {
	if len(raw) == 0 {
		return nil, errors.New("the request carries no object")
	}
	pod := &corev1.Pod{}
	// Case-sensitive, as the API server decodes: "Metadata" is not
	// "metadata".
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, pod); err != nil {
		return nil, fmt.Errorf("decode pod: %w", err)
	}
	return pod, nil
}

// podName names a pod for messages; on CREATE a generated name does not
// exist yet.
func podName(pod *corev1.Pod) string {
	name := pod.Name
	if name == "" {
		name = pod.GenerateName + "*"
	}
	return pod.Namespace + "/" + name
}

func interfaceNames(a *v1alpha1.Approval) []string {
	names := make([]string, len(a.Interfaces))
	for i, in := range a.Interfaces {
		names[i] = in.Interface
	}
	return names
}

func profileNames(a *v1alpha1.Approval) []string {
	names := make([]string, len(a.Profiles))
	for i, p := range a.Profiles {
		names[i] = p.Name
	}
	return names
}

func patched(pod *corev1.Pod, ch podChange, result string, profiles []string) outcome {
	return outcome{resp: admission.Patched("", planPatches(pod, ch)...), result: result, profiles: profiles}
}

func deny(message string) outcome {
	return outcome{resp: admission.Denied(message), result: resultDenied}
}

func errored(code int32, err error) outcome {
	return outcome{resp: admission.Errored(code, err), result: resultError}
}
