package uninstall

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/api/v1alpha1"
)

// DefaultTimeout bounds the wait for the agents: a node detaches its pods
// one reconcile each, a few milliseconds per interface.
const DefaultTimeout = 5 * time.Minute

// Options say which agent to uninstall and how long to wait.
type Options struct {
	// DaemonSet is the agent's.
	DaemonSet types.NamespacedName
	// Timeout bounds the wait for the agents; 0 means DefaultTimeout.
	Timeout time.Duration
	// Poll is how often the nodes are looked at; 0 means 2s.
	Poll time.Duration
	// Log receives one line per step; nil discards them.
	Log io.Writer
	// Now gives the mark's value; nil means time.Now.
	Now func() time.Time
}

// Run takes podnet off every node that runs its agent (see the package
// comment). A DaemonSet that does not exist leaves only the Nodes'
// annotations to remove.
func Run(ctx context.Context, c client.Client, o Options) error {
	o = o.withDefaults()
	var ds appsv1.DaemonSet
	err := c.Get(ctx, o.DaemonSet, &ds)
	switch {
	case apierrors.IsNotFound(err):
		o.logf("daemonset %s not found: no agent to uninstall", o.DaemonSet)
		return clearNodes(ctx, c, o)
	case err != nil:
		return fmt.Errorf("daemonset %s: %w", o.DaemonSet, err)
	}
	if err := mark(ctx, c, &ds, o); err != nil {
		return err
	}
	if err := wait(ctx, c, &ds, o); err != nil {
		return err
	}
	return clearNodes(ctx, c, o)
}

func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Poll <= 0 {
		o.Poll = 2 * time.Second
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

func (o Options) logf(format string, args ...any) {
	fmt.Fprintf(o.Log, "uninstall: "+format+"\n", args...)
}

// mark puts the uninstall mark on the DaemonSet. A mark already there (a
// run that timed out) is kept with the agents' reports; a new one first
// clears reports left from a run that was taken back.
func mark(ctx context.Context, c client.Client, ds *appsv1.DaemonSet, o Options) error {
	if run, ok := ds.Annotations[v1alpha1.UninstallAnnotation]; ok {
		o.logf("daemonset %s already carries the uninstall mark %q: waiting for its agents", o.DaemonSet, run)
		return nil
	}
	if err := clearNodes(ctx, c, o, v1alpha1.AgentUninstalledAnnotation); err != nil {
		return err
	}
	run := o.Now().UTC().Format(time.RFC3339Nano)
	patch, err := annotationPatch(map[string]any{v1alpha1.UninstallAnnotation: run})
	if err == nil {
		err = c.Patch(ctx, ds, client.RawPatch(types.MergePatchType, patch))
	}
	if err != nil {
		return fmt.Errorf("daemonset %s: set the uninstall mark: %w", o.DaemonSet, err)
	}
	o.logf("uninstall mark %s=%q set on daemonset %s: agents detach their pods and clean their nodes", v1alpha1.UninstallAnnotation, run, o.DaemonSet)
	return nil
}

// wait polls until every node that runs an agent pod reported, or the
// timeout, which names the nodes that did not.
func wait(ctx context.Context, c client.Client, ds *appsv1.DaemonSet, o Options) error {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	var pending []string
	for {
		var pods corev1.PodList
		var nodes corev1.NodeList
		err := c.List(ctx, &pods, client.InNamespace(ds.Namespace))
		if err == nil {
			err = c.List(ctx, &nodes)
		}
		if err == nil {
			pending = Pending(ds, pods.Items, nodes.Items)
			if len(pending) == 0 {
				o.logf("every agent of daemonset %s reported its node clean", o.DaemonSet)
				return nil
			}
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = fmt.Errorf("the agents of %d node(s) did not report: %s", len(pending), strings.Join(Stuck(ds, pods.Items, pending), "; "))
			}
			return fmt.Errorf("uninstall: daemonset %s: after %s: %w (the mark %s stays: run again to wait on, or remove it to make the agents attach again; "+
				"an agent that never ran has nothing to clean on its node: `helm uninstall --no-hooks` then removes the release without waiting for it)",
				o.DaemonSet, o.Timeout, err, v1alpha1.UninstallAnnotation)
		case <-time.After(o.Poll):
		}
	}
}

// Pending are the nodes (sorted) that run a pod of the DaemonSet and do
// not carry its report: the annotation with the DaemonSet's UID. A node
// whose agent pod is not running does not report either, and is named.
func Pending(ds *appsv1.DaemonSet, pods []corev1.Pod, nodes []corev1.Node) []string {
	reported := map[string]bool{}
	for _, n := range nodes {
		if v, ok := n.Annotations[v1alpha1.AgentUninstalledAnnotation]; ok && v == string(ds.UID) {
			reported[n.Name] = true
		}
	}
	var out []string
	for _, p := range pods {
		if p.Spec.NodeName == "" || !ownedBy(&p, ds) || reported[p.Spec.NodeName] {
			continue
		}
		out = append(out, p.Spec.NodeName)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Stuck describes, for each pending node, the DaemonSet's pod there and
// why it is not running when it is not: what an admin looks at first
// when an agent never reports.
func Stuck(ds *appsv1.DaemonSet, pods []corev1.Pod, pending []string) []string {
	out := make([]string, 0, len(pending))
	for _, node := range pending {
		desc := node
		for _, p := range pods {
			if p.Spec.NodeName == node && ownedBy(&p, ds) {
				desc = fmt.Sprintf("%s (pod %s: %s)", node, p.Name, podState(&p))
			}
		}
		out = append(out, desc)
	}
	return out
}

// podState is a pod's phase, or the reason its first waiting container
// waits (CreateContainerError, ImagePullBackOff, …) with its message.
func podState(p *corev1.Pod) string {
	for _, cs := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
		if w := cs.State.Waiting; w != nil && w.Reason != "" {
			if w.Message != "" {
				return fmt.Sprintf("container %s waiting, %s: %s", cs.Name, w.Reason, w.Message)
			}
			return fmt.Sprintf("container %s waiting, %s", cs.Name, w.Reason)
		}
	}
	if p.Status.Phase == "" {
		return "no status yet"
	}
	return string(p.Status.Phase)
}

func ownedBy(p *corev1.Pod, ds *appsv1.DaemonSet) bool {
	ref := metav1.GetControllerOf(p)
	return ref != nil && ref.UID == ds.UID
}

// clearNodes removes podnet's annotations (keys; none given: every one
// podnet writes on Nodes) from every Node that carries one.
func clearNodes(ctx context.Context, c client.Client, o Options, keys ...string) error {
	if len(keys) == 0 {
		keys = []string{v1alpha1.AgentUninstalledAnnotation, v1alpha1.NodeVNIsAnnotation}
	}
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	var errs []error
	for i := range nodes.Items {
		n := &nodes.Items[i]
		remove := map[string]any{}
		for _, k := range keys {
			if _, ok := n.Annotations[k]; ok {
				remove[k] = nil
			}
		}
		if len(remove) == 0 {
			continue
		}
		patch, err := annotationPatch(remove)
		if err == nil {
			err = c.Patch(ctx, n, client.RawPatch(types.MergePatchType, patch))
		}
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("node %q: remove podnet's annotations: %w", n.Name, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	o.logf("podnet's annotations %v removed from the nodes", keys)
	return nil
}

func annotationPatch(annotations map[string]any) ([]byte, error) {
	b, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
	if err != nil {
		return nil, fmt.Errorf("annotation patch: %w", err)
	}
	return b, nil
}
