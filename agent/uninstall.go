package agent

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"podnet.io/podnet/agent/podstate"
	"podnet.io/podnet/agent/uninstall"
	"podnet.io/podnet/api/v1alpha1"
)

// Uninstalling is the uninstall as the pod reconcile sees it
// (agent/uninstall): whether its mark is on, which pods were detached for
// it, and the pods it wants looked at. Nil on Reconciler: the agent does
// not watch for the mark.
type Uninstalling interface {
	Marked(ctx context.Context) (bool, error)
	IsFinished(uid types.UID) bool
	Finish(uid types.UID)
	Source(h handler.EventHandler) source.Source
}

var _ Uninstalling = (*uninstall.Uninstall)(nil)

// errUninstalling answers the chained CNI plugin during an uninstall: the
// sandbox of a podnet pod fails (the kubelet retries) rather than start
// without its networks.
var errUninstalling = errors.New(v1alpha1.ReasonUninstalling + ": podnet is being uninstalled: no networks are attached")

// uninstallResult is the condition of a pod once podnet detached it for an
// uninstall. Its status does not change: a pod that was Ready stays in its
// Services on the primary network (nothing would ever set it back once
// podnet is gone), and one that was waiting for its networks keeps
// waiting, since they will not come.
func uninstallResult(pod *corev1.Pod) podstate.Result {
	if isReady(pod) {
		return podstate.Result{Ready: true, Reason: v1alpha1.ReasonUninstalling,
			Message: "podnet is being uninstalled: its networks were removed from the pod, which keeps its primary network"}
	}
	return podstate.Result{Reason: v1alpha1.ReasonUninstalling, Message: "podnet is being uninstalled: no networks are attached"}
}

// duringUninstall handles the pod instead of the usual reconcile while the
// uninstall mark is on (handled); a failed read of the mark is handled
// too, as an error to retry.
func (r *Reconciler) duringUninstall(ctx context.Context, pod *corev1.Pod) (handled bool, err error) {
	if r.Uninstall == nil {
		return false, nil
	}
	marked, err := r.Uninstall.Marked(ctx)
	if err != nil {
		return true, err
	}
	if !marked {
		return false, nil
	}
	return true, r.uninstalling(ctx, pod)
}

// uninstalling is the pod reconcile while the mark is on: nothing is
// attached, and what the pod holds is detached through the usual path.
func (r *Reconciler) uninstalling(ctx context.Context, pod *corev1.Pod) error {
	u := r.Uninstall
	r.setups().Answer(string(pod.UID), "", errUninstalling)
	if u.IsFinished(pod.UID) {
		return nil
	}
	if uninstall.HoldsPodnet(pod) || r.record(client.ObjectKeyFromObject(pod)) != nil {
		if err := r.detach(ctx, pod); err != nil {
			return err
		}
		running := pod.DeletionTimestamp == nil && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
		if running && uninstall.HoldsPodnet(pod) {
			if err := r.writeStatus(ctx, pod, nil, uninstallResult(pod)); err != nil {
				return err
			}
		}
	}
	u.Finish(pod.UID)
	return nil
}
