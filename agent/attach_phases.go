package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"podnet.io/podnet/agent/dra"
	"podnet.io/podnet/agent/podstate"
	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/cri"
	"podnet.io/podnet/pkg/dataplane"
	"podnet.io/podnet/pkg/policy"
)

// An attach runs in phases, each filling in its part of the attempt or
// ending it with an outcome:
//
//	judge    the approval verifies, the pod's spec fits it, and the admin
//	         still grants it (what is no longer granted is taken out)
//	claim    the addresses and MACs of its interfaces (IPClaims, MACClaims)
//	resolve  the pod's sandbox and netns (the CNI plugin's hint, or CRI)
//	plan     no MAC the node uses already; the dataplane's desired state,
//	         with the network policies and the VXLAN underlay
//	apply    the dataplane, then the release of addresses no longer used
//	report   one status report from the outcome: the CNI plugin's answer,
//	         the condition and network-status, the Event, the metrics
//
// Only report writes to the pod, so every way an attach ends is reported
// the same way.

// stage is where an attach ended.
type stage int

const (
	// stageUnjudged: the grants could not be read; retried, nothing said.
	stageUnjudged stage = iota
	// stageRefused: the approval does not verify, or there is no grant
	// check to judge it with.
	stageRefused
	// stagePrivileged: the pod's spec breaks what its approval assumes.
	stagePrivileged
	// stageUnclaimed: an address could not be reserved.
	stageUnclaimed
	// stageWaiting: the pod has no sandbox yet; nothing to say.
	stageWaiting
	// stageNoRuntime: the runtime could not be asked for the sandbox.
	stageNoRuntime
	// stageUnusable: the signed approval cannot be built.
	stageUnusable
	// stageUnderlay: a VXLAN network has no usable underlay here.
	stageUnderlay
	// stageCannotCarry: the node cannot carry one of the pod's networks.
	stageCannotCarry
	// stageApplied: the dataplane ran (and may have failed).
	stageApplied
)

// reported says whether an attach that ended at s tells the pod (its
// status and the CNI plugin); the others only retry.
func (s stage) reported() bool {
	return s != stageUnjudged && s != stageWaiting && s != stageNoRuntime
}

// attempt is one attach of one pod: what the phases found so far.
type attempt struct {
	pod    *corev1.Pod
	key    types.NamespacedName
	ref    podstate.Ref
	hint   cri.Sandbox // the sandbox the CNI plugin waits in, if hinted
	hinted bool
	steps  *setupSteps

	// judge: the verified approval without what is no longer granted,
	// and the prepared ResourceClaims it includes.
	approval *v1alpha1.Approval
	revoked  []policy.Revocation
	claims   []*dra.VerifiedClaim
	// claim: the addresses by interface name.
	addrs map[string][]net.IPNet
	// resolve: the sandbox and the pod's record.
	sandbox cri.Sandbox
	rec     *podRecord
	// plan: what the dataplane is to build.
	desired dataplane.Pod
	// apply: the interfaces read back, and when, before the plugin is
	// answered (UnheldRestarts: what started before it started without
	// them).
	built   []dataplane.InterfaceStatus
	builtAt time.Time
}

// outcome is how an attach ended: the one value its report is written
// from.
type outcome struct {
	stage stage
	// res is the podnet.io/networks-ready condition.
	res podstate.Result
	// status is the network-status; nil lists no interfaces.
	status []v1alpha1.NetworkStatus
	// sandbox is the sandbox whose CNI request is answered ("": every
	// request of the pod), and answer the answer.
	sandbox string
	answer  error
	// detach removes whatever was built for the pod.
	detach bool
	// wasAttached: the pod was Ready with the same interfaces before.
	wasAttached bool
	// err makes the reconcile retry with backoff; otherwise later says
	// when to look again.
	err   error
	later reconcile.Result
}

// then is the reconcile's result once the report is written: the
// outcome's error and those of the report, or the outcome's next look.
func (o *outcome) then(errs ...error) (reconcile.Result, error) {
	if err := errors.Join(append([]error{o.err}, errs...)...); err != nil {
		return reconcile.Result{}, err
	}
	return o.later, nil
}

// failure is the outcome of a phase that cannot go on: nothing is
// attached, and a CNI request for the sandbox fails with err.
func failure(s stage, reason, sandbox string, err error) *outcome {
	return &outcome{stage: s, res: podstate.Result{Reason: reason, Message: err.Error()}, sandbox: sandbox, answer: err}
}

// refusal is the outcome of a judgement that gives the pod nothing: what
// an earlier approval built goes too.
func refusal(s stage, reason, msg string) *outcome {
	res := podstate.Result{Reason: reason, Message: msg}
	return &outcome{stage: s, res: res, answer: answerOf(res), detach: true}
}

// attach makes the networks of a pod that asks for them match its
// approval, phase by phase, and reports how that ended.
func (r *Reconciler) attach(ctx context.Context, pod *corev1.Pod) (reconcile.Result, error) {
	at := r.begin(pod)
	out := r.judge(ctx, at)
	if out == nil {
		out = r.carries(ctx, at)
	}
	if out == nil {
		out = r.claim(ctx, at)
	}
	if out == nil {
		out = r.resolve(ctx, at)
	}
	if out == nil {
		out = r.plan(ctx, at)
	}
	if out == nil {
		out = r.apply(ctx, at)
	}
	return r.report(ctx, at, out)
}

// begin starts an attempt: the first attach a sandbox waits for since
// its request (CNI or NRI) is timed step by step from that request.
func (r *Reconciler) begin(pod *corev1.Pod) *attempt {
	at := &attempt{pod: pod, key: client.ObjectKeyFromObject(pod), ref: refOf(pod)}
	at.hint, at.hinted = r.setups().Sandbox(at.ref.UID)
	at.steps = r.Metrics.setupSteps(r.setups().Unanswered(at.ref.UID))
	return at
}

// judge verifies the approval and re-judges it: the agent executes only
// what is signed for this pod, for a pod that cannot rewrite it, and
// still granted by the admin; what is no longer granted is narrowed or
// left out (attempt.approval, attempt.revoked).
func (r *Reconciler) judge(ctx context.Context, at *attempt) *outcome {
	a, claims, err := r.approve(at.pod)
	at.claims = claims
	if err != nil {
		return refusal(stageRefused, v1alpha1.ReasonInvalidApproval, fmt.Sprintf("approval refused, nothing configured: %v", err))
	}
	if msg, refused := privilegeRefusal(at.pod, a); refused {
		return refusal(stagePrivileged, v1alpha1.ReasonPrivilegedPod, msg)
	}
	if r.Grants == nil {
		return refusal(stageRefused, v1alpha1.ReasonInvalidApproval, "approval refused, nothing configured: the agent has no grant check configured")
	}
	revoked, err := r.Grants.Revoked(ctx, at.pod, a)
	if err != nil {
		return &outcome{stage: stageUnjudged, err: err}
	}
	at.approval, at.revoked = policy.Narrow(a, revoked), revoked
	return nil
}

// claim reserves the addresses (attempt.addrs) first, even before the pod
// has a sandbox: each new one is an API round trip (its claim's create),
// made while the kubelet is still creating the sandbox, so that the
// sandbox (held by the CNI plugin, or its wait container) need not wait
// for it. A full quota is tried again when the allocator says.
func (r *Reconciler) claim(ctx context.Context, at *attempt) *outcome {
	at.steps.step(stepWait)
	addrs, err := r.ensureAddresses(ctx, at.pod, at.approval)
	if err == nil {
		err = r.ensureMACs(ctx, at.pod, at.approval)
	}
	at.steps.step(stepAddresses)
	if err != nil {
		out := failure(stageUnclaimed, ipamReason(err), at.hint.ID, err)
		if wait := retryAfter(err); wait > 0 {
			out.later = reconcile.Result{RequeueAfter: wait}
		} else {
			out.err = err
		}
		return out
	}
	at.addrs = addrs
	return nil
}

// resolve finds the pod's sandbox (attempt.sandbox): the one the CNI
// plugin waits in, else through CRI. A pod without one yet is looked at
// again once it has one.
func (r *Reconciler) resolve(ctx context.Context, at *attempt) *outcome {
	if !at.hinted {
		// The runtime may have asked while the addresses were claimed (an
		// API round trip): its sandbox is attached now rather than by the
		// next reconcile, which waits for this one to end.
		at.hint, at.hinted = r.setups().Sandbox(at.ref.UID)
		if at.hinted {
			// Timed from the request: it waited for the claim, and then
			// for nothing more until its addresses were there.
			at.steps = r.Metrics.setupSteps(r.setups().Unanswered(at.ref.UID))
			at.steps.step(stepWait)
			at.steps.step(stepAddresses)
		}
	}
	sb, err := at.hint, error(nil)
	if !at.hinted {
		sb, err = r.Sandboxes.Sandbox(ctx, at.ref.UID)
	}
	if errors.Is(err, cri.ErrNoSandbox) {
		return &outcome{stage: stageWaiting, later: r.waitForSandbox(at.pod, at.key, at.ref)}
	}
	if err != nil {
		return &outcome{stage: stageNoRuntime, err: err}
	}
	if r.SandboxWaits != nil {
		r.SandboxWaits.Forget(at.ref.UID)
	}
	at.sandbox = sb
	at.rec = r.ensureRecord(at.key, at.ref)
	r.mu.Lock()
	at.rec.sandboxWaits = 0
	at.rec.netns = sb.NetNS
	r.mu.Unlock()
	return nil
}

// plan refuses a MAC the node uses already, then translates the approval
// and addresses into the dataplane's desired state in the sandbox's netns,
// with each interface's network policy and the node's underlay for VXLAN
// networks (attempt.desired).
func (r *Reconciler) plan(ctx context.Context, at *attempt) *outcome {
	if err := r.checkNodeMACs(ctx, at.ref.UID, at.approval); err != nil {
		// Tried again: what holds the MAC on the node may go (a pod's
		// port being deleted).
		out := failure(stageUnusable, v1alpha1.ReasonAttachFailed, at.sandbox.ID, err)
		out.err = err
		return out
	}
	desired, err := planPod(at.ref.UID, at.sandbox.NetNS, at.approval, at.addrs, dra.Allocated(at.claims))
	if err != nil {
		// Signed but unusable: only a new approval changes that.
		return failure(stageUnusable, v1alpha1.ReasonAttachFailed, at.sandbox.ID, err)
	}
	at.desired = desired
	if out := r.planPolicies(ctx, at); out != nil {
		return out
	}
	if at.desired, err = r.resolveSpans(ctx, at.desired, at.approval); err == nil {
		err = r.lockTunnels(ctx, at.ref, at.desired)
	}
	if err != nil {
		out := failure(stageUnderlay, v1alpha1.ReasonAttachFailed, at.sandbox.ID, err)
		out.err = err
		return out
	}
	return nil
}

// apply builds the desired state, releases the addresses the approval no
// longer lists, and concludes the condition and network-status.
func (r *Reconciler) apply(ctx context.Context, at *attempt) *outcome {
	if r.Unheld != nil {
		r.Unheld.Before(at.pod, at.sandbox.ID)
	}
	start := time.Now()
	st, applyErr := r.Dataplane.Apply(ctx, at.desired)
	at.built, at.builtAt = st, time.Now()
	if applyErr != nil {
		applyErr = errors.Join(applyErr, r.unlockUnmade(ctx, at.ref, at.desired, applyErr))
	}
	r.Metrics.observeApply(time.Since(start))
	at.steps.step(stepInterfaces)

	// Release what the approval no longer lists only after the dataplane
	// stopped using it, and before the status forgets that it was held.
	prev := podstate.DecodeStatus(at.pod.Annotations[v1alpha1.NetworkStatusAnnotation])
	releaseErr := r.release(ctx, at.ref, stale(r.heldBy(at.pod, prev), at.approval))

	status := networkStatus(at.pod.Namespace, defaultEntry(r.clusterNetwork(), at.sandbox.IPs, at.pod.Status.PodIPs), at.approval, st)
	res := revokedResult(attachResult(at.pod.Namespace, at.approval, st, applyErr), at.revoked)
	return &outcome{
		stage: stageApplied, res: res, status: status,
		sandbox: at.sandbox.ID, answer: answerOf(res),
		wasAttached: isReady(at.pod) && sameInterfaces(prev, status),
		err:         errors.Join(applyErr, releaseErr),
		later:       reconcile.Result{RequeueAfter: r.Resync, Priority: ptr.To(podstate.PriorityResync)},
	}
}

// report tells how the attach ended: the CNI plugin first (the sandbox
// goes on while the status is written: the readiness gate waits for the
// condition anyway), then the pod's status, then the Event and metrics,
// which thus never announce a status not yet written.
func (r *Reconciler) report(ctx context.Context, at *attempt, out *outcome) (reconcile.Result, error) {
	// Chosen before the status write, which updates the pod.
	ev, countAs := eventFor(eventInput{
		stage: out.stage, res: out.res, revoked: at.revoked,
		said:        saysAlready(at.pod, out.res.Message),
		wasAttached: out.wasAttached,
		announced:   r.wroteRecently(at.pod, "event", out.res.Message),
	})
	if !out.stage.reported() {
		r.count(countAs)
		return out.then()
	}
	r.setups().Answer(at.ref.UID, out.sandbox, out.answer)
	if out.stage == stageApplied {
		at.steps.answered()
	}
	var detachErr error
	if out.detach {
		detachErr = r.detach(ctx, at.pod)
	}
	// Containers that started before the networks are stopped before the
	// condition says they are ready, so the pod turns Ready with its app
	// started again rather than with the one that ran without them.
	var restartErr error
	if out.stage == stageApplied && r.Unheld != nil {
		restartErr = r.Unheld.After(ctx, r.Events, at.pod, at.sandbox.ID, len(podstate.Attached(out.status)) > 0, out.res.Ready, at.builtAt)
	}
	statusErr := r.writeStatus(ctx, at.pod, out.status, out.res)
	if out.stage == stageApplied && r.Claims != nil {
		statusErr = errors.Join(statusErr, r.Claims.WriteStatus(ctx, r.Client, at.claims, at.built))
	}
	r.count(countAs)
	r.emit(at.pod, ev)
	if out.stage == stageApplied {
		r.settle(at, out, statusErr == nil)
	}
	return out.then(detachErr, statusErr, restartErr)
}

// settle remembers what an applied attach holds, and records its latency
// once its networks are ready and announced.
func (r *Reconciler) settle(at *attempt, out *outcome, written bool) {
	r.mu.Lock()
	at.rec.attachments = attachmentsOf(at.approval)
	at.rec.interfaces = len(podstate.Attached(out.status))
	observe, done := measureAttach(at.rec.measured, at.sandbox.ID, out.res.Ready && written, out.wasAttached)
	if done {
		at.rec.measured = at.sandbox.ID
	}
	r.mu.Unlock()
	if observe {
		r.Metrics.observeAttach(time.Since(at.sandbox.Created))
	}
	r.Metrics.setManaged(r.counts())
}

// emit records ev on the pod. An Attached or NodeCannotCarry Event is
// remembered: the pod event that the cache delivers before the status
// write would otherwise announce it twice.
func (r *Reconciler) emit(pod *corev1.Pod, ev *podEvent) {
	if ev == nil {
		return
	}
	r.Events.Eventf(pod, nil, ev.Type, ev.Reason, ev.Action, "%s", ev.Message)
	if ev.Reason == v1alpha1.ReasonAttached || ev.Reason == v1alpha1.ReasonNodeCannotCarry {
		r.noteWrote(pod, "event", ev.Message)
	}
}

// count counts a failure under its reason, if any.
func (r *Reconciler) count(reason string) {
	if reason != "" {
		r.Metrics.error(reason)
	}
}

// saysAlready reports whether the pod's condition carries msg.
func saysAlready(pod *corev1.Pod, msg string) bool {
	c := podstate.FindCondition(pod)
	return c != nil && c.Message == msg
}
