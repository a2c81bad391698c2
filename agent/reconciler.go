package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crevent "sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"podnet.io/podnet/agent/podstate"
	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/dataplane"
	"podnet.io/podnet/pkg/hold"
)

// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=pods/status,verbs=get;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=podnet.io,resources=ipclaims,verbs=get;list;watch;create;delete

// Reconciler makes one node's pods' secondary networks match their
// approvals. Reconcile is safe for concurrent use on different pods.
type Reconciler struct {
	// Client reads pods (from the node-local cache) and patches them.
	Client    client.Client
	Events    podstate.EventRecorder
	NodeName  string
	Sandboxes Sandboxes
	// SandboxWaits, when set, holds the pods that found no sandbox until
	// theirs appears (one node-wide poll for all); nil makes each such pod
	// retry on its own.
	SandboxWaits SandboxPoll
	// NRIAsks, when set, says whether the runtime asks the agent's NRI
	// plugin about every sandbox now (the plugin is connected): the
	// request for the sandbox of a pod held by NRI then wakes its
	// reconcile (Attaches), and the pod does not wait in SandboxWaits.
	NRIAsks func() bool
	// Holds, when set, notes on a pod's condition that this node cannot
	// hold it the way the cluster's mode promised (HoldNotEnforced).
	Holds HoldJudge
	// Attaches, when set, holds the sandboxes the chained CNI plugin is
	// setting up (attach at sandbox setup): their hint is the pod's
	// sandbox, and the plugin's request is answered after each attach.
	Attaches SandboxSetups
	// Unheld, when set, stops the containers of NRI-held pods that the
	// runtime started before their networks (unheld.go).
	Unheld    UnheldStops
	Dataplane Dataplane
	Addresses Addresses
	// MACs claims the MACs of networks with a macRange, and static MACs
	// (macs.go).
	MACs MACs
	// NodeMACs reads the MACs the node uses, which no pod interface may
	// carry (nodemacs.go); nil refuses every interface with a MAC.
	NodeMACs NodeMACs
	Verifier podstate.Verifier
	// Grants re-checks that a verified approval is still granted; it must
	// be set (a nil Grants refuses every pod rather than skip the check).
	Grants Grants
	// Metrics, when not nil, records what the agent does.
	Metrics *Metrics
	// Carry, when set, tells what this node can carry: a pod bound to it
	// that needs what it lacks gets nothing (NodeCannotCarry, carry.go).
	Carry NodeCarry
	// Underlays gives VXLAN networks their source address and peers.
	Underlays Underlays
	// Tunnels locks the node's ports of point-to-point VXLAN tunnels to
	// their remotes (nil: such tunnels are refused).
	Tunnels TunnelLock
	// Resync is how often a configured pod is checked again, which repairs
	// drift (an interface deleted by hand, a changed MTU).
	Resync time.Duration
	// ClusterNetwork names the default entry of the network-status;
	// empty means v1alpha1.DefaultClusterNetworkName.
	ClusterNetwork string
	// MultusStatus makes the agent write the network-status under Multus'
	// key k8s.v1.cni.cncf.io/network-status too, for the tools that read
	// it, where no Multus writes it.
	MultusStatus bool
	// Claims, when set, holds the ResourceClaims of podnet's DRA driver
	// prepared on this node: their interfaces are built with the pod's
	// own (claims_seam.go).
	Claims ResourceClaims
	// Uninstall, when set, turns every reconcile into a detach while the
	// uninstall mark is on the agent's DaemonSet (agent/uninstall).
	Uninstall Uninstalling
	// NodePolicy makes the agent watch its node's NodePolicy for its pod
	// interfaces' network policies: set it to what WatchNodePolicy said
	// of the cache options. Without it interfaces get their networks'
	// floors only.
	NodePolicy bool

	mu   sync.Mutex
	pods map[types.NamespacedName]*podRecord

	// policies are the node's NodePolicy, parsed (nodepolicy.go).
	policies nodePolicies

	// carryEvents carries the pods CarryChanged looks at again.
	carryOnce   sync.Once
	carryEvents chan crevent.GenericEvent
}

// podRecord is what the agent remembers of a pod it configured, so that the
// pod can be cleaned up after it has left the API (a delete event carries
// only the name). After a restart the records are gone; the periodic sweep
// then finds the leftovers by the marks the dataplane and the IPAM leave.
type podRecord struct {
	ref         podstate.Ref
	netns       string
	attachments []attachment
	interfaces  int
	// sandboxWaits counts retries while the pod has no sandbox yet.
	sandboxWaits int
	// measured is the sandbox whose attach latency was recorded.
	measured string
	// wrote is the agent's latest writes on the pod (written.go).
	wrote podstate.WriteLog
}

// Retry delays while a pod has no sandbox yet. The first retries are
// quick because the sandbox of a just-scheduled pod appears within a
// second or so and its app waits on us (the kubelet's next status update
// may come much later); one retry costs a single CRI list call. A pod that
// stays without a sandbox (a node under pressure) is looked at less often.
const (
	sandboxRetryFirst = 10 * time.Millisecond
	sandboxRetryFast  = 100 * time.Millisecond
	sandboxRetrySlow  = 2 * time.Second
	sandboxFastTries  = 300 // about 30 s at sandboxRetryFast
)

// sandboxRetry is the delay before the n-th retry (n from 0).
func sandboxRetry(n int) time.Duration {
	if n >= sandboxFastTries {
		return sandboxRetrySlow
	}
	d := sandboxRetryFirst
	for i := 0; i < n && d < sandboxRetryFast; i++ {
		d *= 2
	}
	return min(d, sandboxRetryFast)
}

// Reconcile implements reconcile.Reconciler.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var pod corev1.Pod
	if err := r.Client.Get(ctx, req.NamespacedName, &pod); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, r.forget(ctx, req.NamespacedName)
		}
		return reconcile.Result{}, fmt.Errorf("pod %s: get: %w", req.NamespacedName, err)
	}
	if pod.Spec.NodeName != r.NodeName || pod.Spec.HostNetwork {
		return reconcile.Result{}, nil
	}
	if handled, err := r.duringUninstall(ctx, &pod); handled {
		return reconcile.Result{}, err
	}
	if rec := r.record(req.NamespacedName); rec != nil && rec.ref.UID != string(pod.UID) {
		// A new pod took the name of one we configured: clean up the old.
		if err := r.forget(ctx, req.NamespacedName); err != nil {
			return reconcile.Result{}, err
		}
	}
	if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		r.setups().Answer(string(pod.UID), "", errTerminating)
		return reconcile.Result{}, r.teardown(ctx, &pod, "the pod is terminating")
	}
	if pod.Annotations[v1alpha1.NetworksAnnotation] == "" && pod.Annotations[v1alpha1.ApprovedAnnotation] == "" && !r.claimed(pod.UID) {
		r.setups().Answer(string(pod.UID), "", nil)
		return reconcile.Result{}, r.noNetworks(ctx, &pod)
	}
	return r.attach(ctx, &pod)
}

// waitForSandbox makes the reconcile of a pod without a sandbox run
// again once it has one: woken by the runtime's NRI request for a pod
// held by NRI while the plugin is connected, by the node-wide
// sandbox poll (SandboxPoll) otherwise, or retried on its own when
// there is none.
//
// The NRI request makes that poll redundant, and that poll is
// not free: in a burst of pods it lists every sandbox of the node, 20
// times a second for the agent and for the runtime both, until the last
// pod has its sandbox. Should the plugin lose the runtime before the
// request, the pod's next update (the kubelet's write of the pod IPs
// its sandbox got, podChanged) reconciles it, and a container the runtime then creates
// is refused by NRI's validator or restarted (Unheld).
func (r *Reconciler) waitForSandbox(pod *corev1.Pod, key types.NamespacedName, ref podstate.Ref) reconcile.Result {
	rec := r.ensureRecord(key, ref)
	if r.Attaches != nil && r.NRIAsks != nil && hold.ByNRI(pod.Annotations) && r.NRIAsks() {
		return reconcile.Result{}
	}
	if r.SandboxWaits != nil {
		r.SandboxWaits.Wait(key, ref.UID)
		return reconcile.Result{}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	delay := sandboxRetry(rec.sandboxWaits)
	rec.sandboxWaits++
	return reconcile.Result{RequeueAfter: delay}
}

// answerOf is the answer to the CNI plugin after an attach: the sandbox
// may go on once the networks are in place (the status is written, or
// retried, apart); otherwise it fails with the condition's message.
func answerOf(res podstate.Result) error {
	if res.Ready {
		return nil
	}
	return fmt.Errorf("%s: %s", res.Reason, res.Message)
}

// measureAttach decides whether the attach latency of sandbox is recorded
// (observe) and whether the sandbox counts as measured from now on (done).
// measured is the sandbox already measured for the pod in this process, ""
// when the process has not yet measured one; ready says the networks are
// up and the status written; wasAttached says the pod was already Ready
// with the same interfaces before this reconcile. A sandbox is measured at
// most once. A pod first seen by this process already attached was
// attached by an earlier agent (before a restart): it is adopted, not
// observed, since its latency would count the agent's downtime and a
// second observation of the same sandbox.
func measureAttach(measured, sandbox string, ready, wasAttached bool) (observe, done bool) {
	switch {
	case !ready || measured == sandbox:
		return false, false
	case measured == "" && wasAttached:
		return false, true
	}
	return true, true
}

// attachResult is the condition after an Apply.
func attachResult(namespace string, a *v1alpha1.Approval, st []dataplane.InterfaceStatus, applyErr error) podstate.Result {
	if applyErr != nil {
		return podstate.Result{Reason: failedReason(applyErr), Message: applyErr.Error()}
	}
	if miss := missing(a, st); len(miss) > 0 {
		return podstate.Result{Reason: v1alpha1.ReasonAttachFailed, Message: "not in place: " + strings.Join(miss, ", ")}
	}
	names := make([]string, 0, len(a.Interfaces))
	for _, ai := range a.Interfaces {
		names = append(names, fmt.Sprintf("%s (%s/%s)", ai.Interface, namespace, ai.Network))
	}
	msg := "attached: " + strings.Join(names, ", ")
	if len(names) == 0 {
		msg = "no networks approved"
	}
	return podstate.Result{Ready: true, Reason: v1alpha1.ReasonAttached, Message: msg}
}

// failedReason names why the dataplane failed: a wire check's finding has
// a reason of its own, for the tenant's Event and the admin's alert.
func failedReason(err error) string {
	var conflict *dataplane.AddressConflictError
	var gateway *dataplane.GatewayUnansweredError
	var noDevice *dataplane.NoFreeDeviceError
	switch {
	case errors.As(err, &noDevice):
		return v1alpha1.ReasonNoFreeHostDevice
	case errors.As(err, &conflict):
		return v1alpha1.ReasonAddressConflict
	case errors.As(err, &gateway):
		return v1alpha1.ReasonGatewayUnanswered
	}
	return v1alpha1.ReasonAttachFailed
}

// ensureAddresses reserves (or finds) the addresses of every interface
// with IPAM, keyed by interface name. The interfaces are served at once:
// each new address is an API round trip (its claim's create), which a
// pod's sandbox may be waiting on.
func (r *Reconciler) ensureAddresses(ctx context.Context, pod *corev1.Pod, a *v1alpha1.Approval) (map[string][]net.IPNet, error) {
	ips := make([][]net.IPNet, len(a.Interfaces))
	errs := make([]error, len(a.Interfaces))
	var wg sync.WaitGroup
	for i, ai := range a.Interfaces {
		if ai.IPAM == nil {
			continue
		}
		wg.Go(func() {
			var err error
			if ips[i], err = r.Addresses.Ensure(ctx, pod, ai); err != nil {
				errs[i] = fmt.Errorf("interface %q network %q: %w", ai.Interface, ai.Network, err)
			}
		})
	}
	wg.Wait()
	out := map[string][]net.IPNet{}
	for i, ai := range a.Interfaces {
		if ai.IPAM != nil && errs[i] == nil {
			out[ai.Interface] = ips[i]
		}
	}
	return out, errors.Join(errs...)
}

// noNetworks handles a pod that asks for nothing: when it asked before, its
// interfaces and addresses go, and a pod with the readiness gate is told
// that it needs nothing more.
func (r *Reconciler) noNetworks(ctx context.Context, pod *corev1.Pod) error {
	_, annotated := pod.Annotations[v1alpha1.NetworkStatusAnnotation]
	gated := slices.ContainsFunc(pod.Spec.ReadinessGates, func(g corev1.PodReadinessGate) bool {
		return g.ConditionType == v1alpha1.NetworksReadyCondition
	})
	if !annotated && !gated && podstate.FindCondition(pod) == nil && r.record(client.ObjectKeyFromObject(pod)) == nil {
		return nil
	}
	err := r.detach(ctx, pod)
	return errors.Join(err, r.writeStatus(ctx, pod, nil, podstate.Result{Ready: true, Reason: v1alpha1.ReasonNoNetworks, Message: "the pod asks for no networks"}))
}

// teardown removes a terminating pod's interfaces and addresses. Its status
// is left alone: the pod is going away.
func (r *Reconciler) teardown(ctx context.Context, pod *corev1.Pod, why string) error {
	if _, annotated := pod.Annotations[v1alpha1.NetworkStatusAnnotation]; !annotated && r.record(client.ObjectKeyFromObject(pod)) == nil {
		return nil
	}
	logf.FromContext(ctx).V(1).Info("tearing down", "why", why)
	return r.detach(ctx, pod)
}

// detach removes the pod's interfaces (inside its netns while the sandbox
// lives, and the node ends in any case) and releases every address the pod
// holds, then forgets the pod.
func (r *Reconciler) detach(ctx context.Context, pod *corev1.Pod) error {
	key := client.ObjectKeyFromObject(pod)
	ref := refOf(pod)
	netns, configured := "", false
	if rec := r.record(key); rec != nil {
		r.mu.Lock()
		netns, configured = rec.netns, rec.interfaces > 0
		r.mu.Unlock()
	}
	if sb, err := r.Sandboxes.Sandbox(ctx, ref.UID); err == nil {
		netns = sb.NetNS
	}
	prev := podstate.DecodeStatus(pod.Annotations[v1alpha1.NetworkStatusAnnotation])
	err := r.Dataplane.Detach(ctx, ref.UID, netns)
	if err == nil {
		err = r.unlockTunnels(ctx, ref)
	}
	if err == nil {
		err = r.Addresses.Release(ctx, ref, "", "")
	}
	if err != nil {
		r.Metrics.error("DetachFailed")
		return fmt.Errorf("pod %s: detach: %w", key, err)
	}
	if configured || len(prev) > 0 {
		r.Events.Eventf(pod, nil, corev1.EventTypeNormal, v1alpha1.ReasonDetached, "Detach", "networks removed")
	}
	r.drop(key)
	return nil
}

// forget cleans up after a pod that has left the API, from what the agent
// remembers of it.
func (r *Reconciler) forget(ctx context.Context, key types.NamespacedName) error {
	rec := r.record(key)
	if rec == nil {
		return nil
	}
	err := r.Dataplane.Detach(ctx, rec.ref.UID, rec.netns)
	if err == nil {
		err = r.unlockTunnels(ctx, rec.ref)
	}
	if err == nil {
		err = r.Addresses.Release(ctx, rec.ref, "", "")
	}
	if err != nil {
		r.Metrics.error("DetachFailed")
		return fmt.Errorf("deleted pod %s (uid %s): detach: %w", key, rec.ref.UID, err)
	}
	r.drop(key)
	return nil
}

// release frees the addresses of the given attachments.
func (r *Reconciler) release(ctx context.Context, ref podstate.Ref, list []attachment) error {
	var errs []error
	for _, at := range list {
		if err := r.Addresses.Release(ctx, ref, at.Network, at.Interface); err != nil {
			errs = append(errs, fmt.Errorf("pod %s/%s interface %q network %q: release: %w", ref.Namespace, ref.Name, at.Interface, at.Network, err))
		}
	}
	return errors.Join(errs...)
}

// heldBy is what the pod may hold addresses for: what its last status
// says, and what this agent attached since it started.
func (r *Reconciler) heldBy(pod *corev1.Pod, prev []v1alpha1.NetworkStatus) []attachment {
	had := held(pod.Namespace, prev)
	if rec := r.record(client.ObjectKeyFromObject(pod)); rec != nil && rec.ref.UID == string(pod.UID) {
		r.mu.Lock()
		for _, at := range rec.attachments {
			if !slices.Contains(had, at) {
				had = append(had, at)
			}
		}
		r.mu.Unlock()
	}
	return had
}

// writeStatus writes the network-status annotation and the condition in
// one strategic merge patch of the status subresource (which keeps the
// kubelet's conditions: the list merges by type), each part only when it
// changed. One write per pod start instead of two halves the agent's pod
// writes in a burst, and the condition never turns True before the status
// it announces is there. A nil status with no annotation on the pod writes
// no annotation.
func (r *Reconciler) writeStatus(ctx context.Context, pod *corev1.Pod, status []v1alpha1.NetworkStatus, res podstate.Result) error {
	if r.Holds != nil {
		res = r.Holds.Judge(pod, res)
	}
	set := r.statusPatch(pod, status)
	annKey := fmt.Sprint(set)
	if set != nil && r.wroteRecently(pod, "annotation", annKey) {
		set = nil
	}
	condKey := fmt.Sprint(res.Ready, res.Reason, res.Message)
	c := podstate.ConditionPatch(pod, res, metav1.Now())
	if c != nil && r.wroteRecently(pod, "condition", condKey) {
		c = nil
	}
	if set == nil && c == nil {
		return nil
	}
	patch, err := statusJSON(set, c)
	if err == nil {
		err = r.Client.Status().Patch(ctx, pod, client.RawPatch(types.StrategicMergePatchType, patch))
	}
	switch {
	case err == nil:
		if set != nil {
			r.noteWrote(pod, "annotation", annKey)
		}
		if c != nil {
			r.noteWrote(pod, "condition", condKey)
		}
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("pod %s/%s: patch status (%s, condition %s): %w", pod.Namespace, pod.Name, v1alpha1.NetworkStatusAnnotation, v1alpha1.NetworksReadyCondition, err)
	}
	return nil
}

// statusPatch is what the pod's annotations must become: the status under
// podnet's key and, with MultusStatus, under Multus' key; nil when both
// already say it. A nil status on a pod without the annotation writes
// nothing.
func (r *Reconciler) statusPatch(pod *corev1.Pod, status []v1alpha1.NetworkStatus) map[string]string {
	cur, annotated := pod.Annotations[v1alpha1.NetworkStatusAnnotation]
	if !annotated && status == nil {
		return nil
	}
	want := podstate.EncodeStatus(status)
	set := map[string]string{}
	if cur != want {
		set[v1alpha1.NetworkStatusAnnotation] = want
	}
	if r.MultusStatus && pod.Annotations[v1alpha1.MultusNetworkStatusAnnotation] != want {
		set[v1alpha1.MultusNetworkStatusAnnotation] = want
	}
	if len(set) == 0 {
		return nil
	}
	return set
}

func (r *Reconciler) clusterNetwork() string {
	if r.ClusterNetwork == "" {
		return v1alpha1.DefaultClusterNetworkName
	}
	return r.ClusterNetwork
}

func (r *Reconciler) record(key types.NamespacedName) *podRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pods[key]
}

func (r *Reconciler) ensureRecord(key types.NamespacedName, ref podstate.Ref) *podRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pods == nil {
		r.pods = map[types.NamespacedName]*podRecord{}
	}
	rec := r.pods[key]
	if rec == nil || rec.ref.UID != ref.UID {
		rec = &podRecord{ref: ref}
		r.pods[key] = rec
	}
	return rec
}

func (r *Reconciler) drop(key types.NamespacedName) {
	r.mu.Lock()
	rec := r.pods[key]
	delete(r.pods, key)
	r.mu.Unlock()
	if rec != nil && r.SandboxWaits != nil {
		r.SandboxWaits.Forget(rec.ref.UID)
	}
	r.Metrics.setManaged(r.counts())
}

// counts returns the pods with networks and their interfaces.
func (r *Reconciler) counts() (pods, interfaces int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rec := range r.pods {
		if rec.interfaces > 0 {
			pods++
			interfaces += rec.interfaces
		}
	}
	return pods, interfaces
}

// statusJSON is a strategic merge patch of the status subresource that
// sets the given annotations (nil: none) and one condition (nil: none);
// the condition list merges by type.
func statusJSON(annotations map[string]string, c *corev1.PodCondition) ([]byte, error) {
	patch := map[string]any{}
	if annotations != nil {
		patch["metadata"] = map[string]any{"annotations": annotations}
	}
	if c != nil {
		patch["status"] = map[string]any{"conditions": []corev1.PodCondition{*c}}
	}
	return json.Marshal(patch)
}

func refOf(pod *corev1.Pod) podstate.Ref {
	return podstate.Ref{Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID)}
}

func isReady(pod *corev1.Pod) bool {
	c := podstate.FindCondition(pod)
	return c != nil && c.Status == corev1.ConditionTrue
}

// attachmentsOf lists the approval's interfaces that hold addresses.
func attachmentsOf(a *v1alpha1.Approval) []attachment {
	var out []attachment
	for _, ai := range a.Interfaces {
		if ai.IPAM != nil {
			out = append(out, attachment{Network: ai.Network, Interface: ai.Interface})
		}
	}
	return out
}

// sameInterfaces reports whether two statuses list the same interfaces,
// networks and addresses.
func sameInterfaces(a, b []v1alpha1.NetworkStatus) bool {
	return slices.EqualFunc(podstate.Attached(a), podstate.Attached(b), func(x, y v1alpha1.NetworkStatus) bool {
		return x.Name == y.Name && x.Interface == y.Interface && slices.Equal(x.IPs, y.IPs)
	})
}
