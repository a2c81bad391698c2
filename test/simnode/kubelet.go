package simnode

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Kubelet plays a node's kubelet (and the scheduler before it) for pods
// the caller creates: pods go straight onto the node, are marked Running,
// and are deleted the way a kubelet finishes a graceful deletion. It uses
// its own client, so its requests are not counted against the agent.
type Kubelet struct {
	Client client.Client
}

// NewPod is a pod of node in namespace, running one container.
func NewPod(namespace, name, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: corev1.PodSpec{
			NodeName:   node,
			Containers: []corev1.Container{{Name: "app", Image: "busybox"}},
		},
	}
}

// Run creates pod and marks it Running, as the scheduler and the kubelet
// would once its sandbox is up.
func (k Kubelet) Run(ctx context.Context, pod *corev1.Pod) error {
	if err := k.Client.Create(ctx, pod); err != nil {
		return fmt.Errorf("create pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	// A merge patch of the phase alone, as the kubelet leaves the
	// conditions of readiness gates to their owners.
	patch := []byte(`{"status":{"phase":"Running"}}`)
	if err := k.Client.Status().Patch(ctx, pod, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("pod %s/%s: mark running: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// ReportIPs writes the pod's IPs (PodIP of its UID) into status.podIP and
// status.podIPs, as the kubelet does at its first status update after the
// sandbox is up, which may come after the agent has attached.
func (k Kubelet) ReportIPs(ctx context.Context, pod *corev1.Pod) error {
	ip := PodIP(string(pod.UID))
	patch := fmt.Appendf(nil, `{"status":{"podIP":%q,"podIPs":[{"ip":%q}]}}`, ip, ip)
	if err := k.Client.Status().Patch(ctx, pod, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("pod %s/%s: report IPs: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// Delete deletes pod gracefully, then removes it as its kubelet does once
// the containers stopped (grace period 0).
func (k Kubelet) Delete(ctx context.Context, pod *corev1.Pod) error {
	err := k.Client.Delete(ctx, pod)
	if err == nil {
		err = k.Client.Delete(ctx, pod, client.GracePeriodSeconds(0))
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}
