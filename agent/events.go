package agent

import (
	corev1 "k8s.io/api/core/v1"

	"podnet.io/podnet/agent/podstate"
	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/policy"
)

// podEvent is one Event on a pod.
type podEvent struct {
	Type, Reason, Action, Message string
}

// eventInput is what the Event reporting an attach depends on: where it
// ended, the condition it leads to, and what the pod and the agent said
// before.
type eventInput struct {
	stage stage
	res   podstate.Result
	// revoked lists what the admin no longer grants.
	revoked []policy.Revocation
	// said: the pod's condition already carries res.Message.
	said bool
	// wasAttached: the pod was Ready with the same interfaces before.
	wasAttached bool
	// announced: this agent emitted this very Attached Event lately, on
	// a write the cache may not show yet.
	announced bool
}

// eventFor chooses the Event that reports an attach (nil for none) and
// the reason it counts under in podnet_agent_errors_total ("" for none).
// Every Event's message is the condition's. A Warning that the condition
// already says is repeated only for a refused approval (the tenant is to
// see each attempt) and for an approval the dataplane cannot build; an
// underlay failure is retried with backoff and only the condition says
// why; a pod whose interfaces did not change hears nothing.
func eventFor(in eventInput) (*podEvent, string) {
	warn := func(action string) *podEvent {
		return &podEvent{Type: corev1.EventTypeWarning, Reason: in.res.Reason, Action: action, Message: in.res.Message}
	}
	switch in.stage {
	case stageRefused:
		return warn("Verify"), in.res.Reason
	case stagePrivileged:
		if in.said {
			return nil, in.res.Reason
		}
		return warn("Verify"), in.res.Reason
	case stageCannotCarry:
		// Said once: the pod is not looked at again until its node changes.
		if in.said || in.announced {
			return nil, in.res.Reason
		}
		return warn("Attach"), in.res.Reason
	case stageUnclaimed:
		if in.said {
			return nil, in.res.Reason
		}
		return warn("Attach"), in.res.Reason
	case stageUnusable:
		return warn("Attach"), in.res.Reason
	case stageUnderlay:
		return nil, in.res.Reason
	case stageApplied:
		return appliedEvent(in)
	case stageNoRuntime:
		return nil, "cri"
	}
	return nil, ""
}

// appliedEvent is eventFor after the dataplane ran: a judgement that
// narrowed or revoked is announced once, a failure each time, and an
// attach when the pod's interfaces changed.
func appliedEvent(in eventInput) (*podEvent, string) {
	switch {
	case len(in.revoked) > 0:
		if in.said {
			return nil, ""
		}
		reason, action := revocationEvent(in.revoked)
		return &podEvent{Type: corev1.EventTypeWarning, Reason: reason, Action: action, Message: in.res.Message}, reason
	case !in.res.Ready:
		reason := in.res.Reason
		if reason == "" {
			reason = v1alpha1.ReasonAttachFailed
		}
		return &podEvent{Type: corev1.EventTypeWarning, Reason: reason, Action: "Attach", Message: in.res.Message}, reason
	case !in.wasAttached && !in.announced:
		return &podEvent{Type: corev1.EventTypeNormal, Reason: v1alpha1.ReasonAttached, Action: "Attach", Message: in.res.Message}, ""
	}
	return nil, ""
}
