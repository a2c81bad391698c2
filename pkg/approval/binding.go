package approval

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"podnet.io/podnet/api/v1alpha1"
)

// The time binding of an approval issued on CREATE. The API server fills a
// new pod's creationTimestamp right after mutating admission, on its own
// clock, to the second; the webhook stamps IssuedAt on its clock, to the
// second. So a pod admitted normally has
//
//	IssuedAt − MaxClockSkew ≤ creationTimestamp ≤ IssuedAt + IssueWindow
//
// and a stored approval put on a pod created later does not.
const (
	// IssueWindow is how long after IssuedAt a pod may be created and
	// still carry the approval: it covers the mutating webhooks that run
	// after podnet's and a slow API server.
	IssueWindow = 30 * time.Second
	// MaxClockSkew is how far the webhook replicas' clocks may run ahead of
	// the API server's (plus the second that truncation loses).
	MaxClockSkew = 5 * time.Second
	// reuseWithin is how old an approval on a pod being created may be for
	// the webhook to keep it rather than issue a fresh one: well inside
	// IssueWindow, so a kept approval still binds the pod.
	reuseWithin = 5 * time.Second
)

// CheckBinding refuses an approval that was issued for another namespace,
// another service account, another request text, another pod (PodUID), or
// for a pod created outside the issue window, so that a signed approval
// copied onto another pod, or kept and replayed later, grants nothing.
func CheckBinding(a *v1alpha1.Approval, pod *corev1.Pod) error {
	key := pod.Namespace + "/" + pod.Name
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = v1alpha1.DefaultServiceAccount
	}
	switch {
	case a.ResourceClaim:
		return fmt.Errorf("approval on pod %s was issued for a resourceclaim, not a pod", key)
	case a.Namespace != pod.Namespace:
		return fmt.Errorf("approval on pod %s was issued for namespace %q", key, a.Namespace)
	case a.ServiceAccount != sa:
		return fmt.Errorf("approval on pod %s was issued for service account %q, the pod runs as %q", key, a.ServiceAccount, sa)
	case a.RequestHash != HashRequest(pod.Annotations[v1alpha1.NetworksAnnotation]):
		return fmt.Errorf("approval on pod %s answers another %s request", key, v1alpha1.NetworksAnnotation)
	case a.PodUID != "" && a.PodUID != string(pod.UID):
		return fmt.Errorf("approval on pod %s (uid %s) was issued for pod uid %s", key, pod.UID, a.PodUID)
	case a.PodUID == "":
		return checkIssueWindow(a, pod)
	}
	return nil
}

// checkIssueWindow holds an approval without a PodUID to the pod created
// right after it was issued.
func checkIssueWindow(a *v1alpha1.Approval, pod *corev1.Pod) error {
	issued, created := a.IssuedAt.Time, pod.CreationTimestamp.Time
	if created.IsZero() {
		return fmt.Errorf("approval on pod %s/%s: the pod has no creationTimestamp to check the approval's issue time against", pod.Namespace, pod.Name)
	}
	if created.Before(issued.Add(-MaxClockSkew)) || created.After(issued.Add(IssueWindow)) {
		return fmt.Errorf("approval on pod %s/%s was issued at %s for a pod created within %s after it, the pod was created at %s: an approval is valid only for the pod it was issued to",
			pod.Namespace, pod.Name, issued.UTC().Format(time.RFC3339), IssueWindow, created.UTC().Format(time.RFC3339))
	}
	return nil
}

// Reusable reports whether the approval already on a pod (verified with
// the webhook's own current key) may stay as it is instead of a freshly
// signed one: it grants exactly what was just decided and still binds this
// pod. It keeps admission idempotent (a second pass changes nothing) even
// though every signature carries a time. now is the webhook's clock; on
// CREATE the pod has no UID or creationTimestamp yet.
func Reusable(existing, decided *v1alpha1.Approval, pod *corev1.Pod, create bool, now time.Time) bool {
	if existing == nil || decided == nil || !sameGrant(existing, decided) {
		return false
	}
	if !create {
		return CheckBinding(existing, pod) == nil
	}
	age := now.Sub(existing.IssuedAt.Time)
	return existing.PodUID == "" && age >= -MaxClockSkew && age <= reuseWithin
}

// sameGrant compares two approvals without the fields that say when, with
// which key and for which pod UID they were signed.
func sameGrant(a, b *v1alpha1.Approval) bool {
	x, y := *a, *b
	x.KeyID, y.KeyID = "", ""
	x.IssuedAt = y.IssuedAt
	x.PodUID, y.PodUID = "", ""
	ex, err1 := Encode(&x)
	ey, err2 := Encode(&y)
	return err1 == nil && err2 == nil && string(ex) == string(ey)
}
