package kubectlpodnet

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"podnet.io/podnet/api/v1alpha1"
)

// diagnose names the one most likely reason a pod's networks are not
// ready, in a sentence, or "" when they are (or none were asked for and
// none is missing). The checks run in the order a pod travels: request,
// namespace opt-in, webhook approval, the agent's verdict, scheduling, the
// agent on the node, the sandbox; the first that fails is the reason.
func diagnose(f PodFacts, e Explanation) string {
	p := f.Pod
	if e.Ready {
		return ""
	}
	if len(e.Claims) > 0 {
		if why := diagnoseClaims(f, e.Claims); why != "" {
			return why
		}
	}
	if strings.TrimSpace(e.Requested) == "" && len(e.Claims) == 0 {
		if e.Approved != nil {
			return fmt.Sprintf("the pod carries %s but no %s request: the approval answers nothing and the agent ignores it", v1alpha1.ApprovedAnnotation, v1alpha1.NetworksAnnotation)
		}
		return fmt.Sprintf("the pod asks for no networks: it has no %s annotation", v1alpha1.NetworksAnnotation)
	}
	if why := diagnoseRequest(f, e); why != "" {
		return why
	}
	switch reason, msg := agentVerdict(e); reason {
	case v1alpha1.ReasonInvalidApproval:
		return "invalid approval: the agent refused it: " + msg
	case v1alpha1.ReasonIPAMFailed:
		return "no address could be reserved (pool exhausted or address taken; see `kubectl podnet pools`): " + msg
	case v1alpha1.ReasonQuotaExceeded:
		return "the namespace holds as many addresses of the network's bridge or link as its quota there (ipam.maxAddressesPerNamespace) allows; the pod attaches once one of them is freed (see `kubectl podnet pools`): " + msg
	case v1alpha1.ReasonAttachFailed:
		return "the agent failed to attach the networks: " + msg
	case v1alpha1.ReasonNodeCannotCarry:
		return "the pod's node cannot carry its networks (the pod named its node, or the node lost a NIC since): delete the pod so that the scheduler places it on a node with carry.podnet.io/ labels for them: " + msg
	}
	if p.Spec.NodeName == "" {
		why := "the scheduler has not placed it yet"
		if c := condition(p, corev1.PodScheduled); c != nil && c.Message != "" {
			why = c.Message
		}
		return "the pod is not scheduled: " + why
	}
	if f.AgentReady != nil && !*f.AgentReady {
		return fmt.Sprintf("no podnet-agent is ready on node %q (namespace %s): nothing there attaches networks; check `kubectl -n %s get pods -o wide` and the DaemonSet's node selector and tolerations", p.Spec.NodeName, v1alpha1.SystemNamespace, v1alpha1.SystemNamespace)
	}
	if c := condition(p, corev1.PodReadyToStartContainers); c == nil || c.Status != corev1.ConditionTrue {
		return fmt.Sprintf("the pod's sandbox is not created yet on node %q: the agent attaches once the runtime has made the pod's network namespace (see the pod's other events)", p.Spec.NodeName)
	}
	if e.Condition != nil && e.Condition.Message != "" {
		return fmt.Sprintf("networks not ready (%s): %s", e.Condition.Reason, e.Condition.Message)
	}
	return fmt.Sprintf("waiting for podnet-agent on node %q: it has not reported on this pod yet", p.Spec.NodeName)
}

// diagnoseRequest checks the annotation's way through: namespace opt-in
// and the webhook's approval. A pod that asks only through ResourceClaims
// has none to check (diagnoseClaims did).
func diagnoseRequest(f PodFacts, e Explanation) string {
	p := f.Pod
	if strings.TrimSpace(e.Requested) == "" {
		return ""
	}
	if !f.NamespaceUnknown && f.NamespaceLabels[v1alpha1.EnabledLabel] != "true" {
		return fmt.Sprintf("namespace %q is not opted in (no label %s=true), so the webhook never saw the pod and nothing approved its networks: an admin must label the namespace, then the pod must be created again", p.Namespace, v1alpha1.EnabledLabel)
	}
	if e.Approved == nil && e.ApprovalError == "" {
		return fmt.Sprintf("no approval: the webhook did not approve this pod (was it created before namespace %q was opted in, or while the webhook was bypassed?); check the namespace label %s=true and the %s annotation, then create the pod again", p.Namespace, v1alpha1.EnabledLabel, v1alpha1.NetworksAnnotation)
	}
	if e.ApprovalError != "" {
		return fmt.Sprintf("invalid approval: %s; create the pod again so that the webhook issues a new one", e.ApprovalError)
	}
	return ""
}

// agentVerdict returns the reason and message of the agent's latest word
// on the pod: its networks-ready condition when False, or else its latest
// Event; "" when it has said nothing or its latest word was a success.
func agentVerdict(e Explanation) (string, string) {
	if c := e.Condition; c != nil && c.Status == corev1.ConditionFalse {
		return c.Reason, c.Message
	}
	if n := len(e.Events); n > 0 && e.Events[n-1].Type != corev1.EventTypeNormal {
		return e.Events[n-1].Reason, e.Events[n-1].Message
	}
	return "", ""
}

// eventTime is when an Event last happened, whichever API wrote it.
func eventTime(ev corev1.Event) time.Time {
	switch {
	case ev.Series != nil && !ev.Series.LastObservedTime.IsZero():
		return ev.Series.LastObservedTime.Time
	case !ev.EventTime.IsZero():
		return ev.EventTime.Time
	case !ev.LastTimestamp.IsZero():
		return ev.LastTimestamp.Time
	}
	return ev.CreationTimestamp.Time
}
