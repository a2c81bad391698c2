package resourceclaims

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"podnet.io/podnet/api/v1alpha1"
)

// The release writes only the status of claims, and the admission policy
// podnet-controller-claim-release (deploy/policies) narrows that write to
// clearing the allocation and reservations of a claim that holds podnet.io
// devices and is not approved in an opted-in namespace.
// +kubebuilder:rbac:groups=resource.k8s.io,resources=resourceclaims,verbs=get;list;watch
// +kubebuilder:rbac:groups=resource.k8s.io,resources=resourceclaims/status,verbs=update
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// ReasonClaimReleased is the reason of the Warning Event on a ResourceClaim
// whose podnet.io devices the controller released.
const ReasonClaimReleased = "ClaimReleased"

// ClaimReleaseReason says why an allocated ResourceClaim holds podnet.io
// devices that no node's agent will ever prepare: its namespace is not
// opted in (podnet's webhook never judged it), or it carries no podnet
// approval. "" when the claim holds no podnet.io device or may keep it.
// The agent refuses such a claim in NodePrepareResources
// (approval.VerifyClaim), so its pods never start while the scheduler
// counts the devices as taken.
func ClaimReleaseReason(claim *resourceapi.ResourceClaim, namespaceOptedIn bool) string {
	if !holdsPodnetDevice(claim) {
		return ""
	}
	if !namespaceOptedIn {
		return fmt.Sprintf("namespace %s is not labelled %s=true", claim.Namespace, v1alpha1.EnabledLabel)
	}
	_, approved := claim.Annotations[v1alpha1.ApprovedAnnotation]
	_, signed := claim.Annotations[v1alpha1.ApprovedSignatureAnnotation]
	if !approved || !signed {
		return "it has no podnet approval"
	}
	return ""
}

// holdsPodnetDevice reports whether the claim is allocated a device of
// podnet's driver.
func holdsPodnetDevice(claim *resourceapi.ResourceClaim) bool {
	if claim.Status.Allocation == nil {
		return false
	}
	for _, r := range claim.Status.Allocation.Devices.Results {
		if r.Driver == v1alpha1.DRADriver {
			return true
		}
	}
	return false
}

// podStarted reports whether any container of the pod ever ran, or the
// pod left Pending: a claim of such a pod was prepared and is in use, and
// releasing it would hand its devices (podnet's and any other driver's) to
// another claim while they are held.
func podStarted(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodPending && p.Status.Phase != "" {
		return true
	}
	for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses, p.Status.EphemeralContainerStatuses} {
		for _, s := range list {
			if s.State.Running != nil || s.State.Terminated != nil || s.LastTerminationState.Terminated != nil || s.RestartCount > 0 || s.ContainerID != "" {
				return true
			}
		}
	}
	return false
}

// scheduledAt is when the pod was bound to its node (its PodScheduled
// condition), or created when it has none.
func scheduledAt(p *corev1.Pod) time.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return p.CreationTimestamp.Time
}

// ClaimRelease releases the podnet.io devices of allocated ResourceClaims
// that no agent will prepare (ClaimReleaseReason): it clears the claim's
// status.allocation and status.reservedFor, as the scheduler's own
// deallocation does, so that the devices count as free again, and says so
// in a Warning Event on the claim. The claim's pods never start (the
// kubelet does not run a pod its claim is not reserved for). A claim is
// released only when each pod it is reserved for was bound at least Grace
// ago and never started a container, read live: a claim in use is never
// taken from under its pod.
type ClaimRelease struct {
	// Client reads claims and namespaces' metadata from the manager's
	// cache and writes claims' status.
	Client client.Client
	// APIReader reads the claim's pods live.
	APIReader client.Reader
	Events    events.EventRecorder
	Grace     time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Reconcile implements reconcile.Reconciler; the request names a claim.
func (r *ClaimRelease) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var claim resourceapi.ResourceClaim
	if err := r.Client.Get(ctx, req.NamespacedName, &claim); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	optedIn, err := r.optedIn(ctx, claim.Namespace)
	if err != nil {
		return reconcile.Result{}, err
	}
	why := ClaimReleaseReason(&claim, optedIn)
	if why == "" {
		return reconcile.Result{}, nil
	}
	wait, err := r.podsWaiting(ctx, &claim)
	if err != nil || wait != 0 {
		return reconcile.Result{RequeueAfter: wait}, err
	}
	claim.Status.Allocation = nil
	claim.Status.ReservedFor = nil
	if err := r.Client.Status().Update(ctx, &claim); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("release resource claim %s/%s: %w", claim.Namespace, claim.Name, err)
	}
	logf.FromContext(ctx).Info("released a resource claim no agent prepares", "claim", req.String(), "why", why)
	if r.Events != nil {
		r.Events.Eventf(&claim, nil, corev1.EventTypeWarning, ReasonClaimReleased, "Release",
			"podnet.io devices released: %s, so no node prepares this claim and its pods never start", why)
	}
	return reconcile.Result{}, nil
}

func (r *ClaimRelease) optedIn(ctx context.Context, ns string) (bool, error) {
	m := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: ns}, m); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("namespace %q: %w", ns, err)
	}
	return m.Labels[v1alpha1.EnabledLabel] == "true", nil
}

// podsWaiting returns how long to wait before the claim may be released:
// 0 when every pod it is reserved for was bound Grace ago and never
// started, or is gone; an hour (the claim is in use: only a change of it
// brings it back sooner) when one started or a reservation is not a pod's.
func (r *ClaimRelease) podsWaiting(ctx context.Context, claim *resourceapi.ResourceClaim) (time.Duration, error) {
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	var wait time.Duration
	for _, ref := range claim.Status.ReservedFor {
		if ref.APIGroup != "" || ref.Resource != "pods" {
			return time.Hour, nil
		}
		var p corev1.Pod
		err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: claim.Namespace, Name: ref.Name}, &p)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return 0, fmt.Errorf("pod %s/%s of resource claim %s: %w", claim.Namespace, ref.Name, claim.Name, err)
		case p.UID != ref.UID:
			continue
		case podStarted(&p):
			return time.Hour, nil
		}
		if left := scheduledAt(&p).Add(r.Grace).Sub(now()); left > wait {
			wait = left
		}
	}
	return wait, nil
}

// claimsOfNamespace maps a namespace's change to its claims that hold
// podnet.io devices.
func claimsOfNamespace(c client.Reader) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		var list resourceapi.ResourceClaimList
		if err := c.List(ctx, &list, client.InNamespace(o.GetName())); err != nil {
			logf.FromContext(ctx).Error(err, "list ResourceClaims", "namespace", o.GetName())
			return nil
		}
		var out []reconcile.Request
		for i := range list.Items {
			if holdsPodnetDevice(&list.Items[i]) {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
			}
		}
		return out
	}
}

// Setup registers the ClaimRelease controller when the API
// server serves resource.k8s.io/v1 ResourceClaims.
func Setup(mgr manager.Manager, grace time.Duration) error {
	gvk := resourceapi.SchemeGroupVersion.WithKind("ResourceClaim")
	if _, err := mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
		if meta.IsNoMatchError(err) {
			mgr.GetLogger().Info("the API server serves no resource.k8s.io/v1 ResourceClaims: none released")
			return nil
		}
		return fmt.Errorf("claim-release controller: %w", err)
	}
	holds := predicate.NewPredicateFuncs(func(o client.Object) bool {
		c, ok := o.(*resourceapi.ResourceClaim)
		return ok && holdsPodnetDevice(c)
	})
	ns := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}}
	err := builder.ControllerManagedBy(mgr).
		Named("resourceclaim-release").
		For(&resourceapi.ResourceClaim{}, builder.WithPredicates(holds)).
		Watches(ns, handler.EnqueueRequestsFromMapFunc(claimsOfNamespace(mgr.GetClient())),
			builder.OnlyMetadata, builder.WithPredicates(predicate.LabelChangedPredicate{})).
		Complete(&ClaimRelease{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Events: mgr.GetEventRecorder(v1alpha1.ControllerName), Grace: grace})
	if err != nil {
		return fmt.Errorf("claim-release controller: %w", err)
	}
	return nil
}
