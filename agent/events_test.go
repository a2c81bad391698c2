package agent

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/policy"
)

// TestEventFor: the Event that reports each way an attach can end, and
// the reason it is counted under.
func TestEventFor(t *testing.T) {
	refused := result{Reason: ReasonInvalidApproval, Message: "approval refused, nothing configured: signature does not verify"}
	privileged := result{Reason: ReasonPrivilegedPod, Message: `refused, nothing attached: container "app" adds NET_ADMIN`}
	quota := result{Reason: ReasonQuotaExceeded, Message: "quota of 2 addresses reached"}
	unusable := result{Reason: ReasonAttachFailed, Message: `approval interfaces[0] ("net1"): mac "zz": invalid MAC address`}
	attachedRes := result{Ready: true, Reason: ReasonAttached, Message: "attached: net1 (tenant/data)"}
	failedRes := result{Reason: ReasonAttachFailed, Message: `interface "net2": master "eth1": link not found`}
	revokedRes := result{Reason: ReasonGrantRevoked, Message: `grant revoked, detached: net1 (network "data"): gone`}
	narrowedRes := result{Ready: true, Reason: ReasonGrantNarrowed, Message: "grant narrowed in place: net1 (network \"data\"): mtu 9000 lowered to 1500"}
	lowered := v1alpha1.ApprovedInterface{Interface: "net1", MTU: 1500}
	detached := []policy.Revocation{{Interface: "net1", Network: "data", Reason: "gone"}}
	narrowed := []policy.Revocation{{Interface: "net1", Network: "data", Reason: "mtu 9000 lowered to 1500", Narrowed: &lowered}}
	warning := func(reason, action string, res result) *podEvent {
		return &podEvent{Type: corev1.EventTypeWarning, Reason: reason, Action: action, Message: res.Message}
	}
	cases := []struct {
		name    string
		in      eventInput
		want    *podEvent
		countAs string
	}{
		{"grants unreadable: retried silently", eventInput{stage: stageUnjudged}, nil, ""},
		{"waiting for the sandbox", eventInput{stage: stageWaiting}, nil, ""},
		{"runtime unreachable: counted, no Event", eventInput{stage: stageNoRuntime}, nil, "cri"},
		{"refused approval", eventInput{stage: stageRefused, res: refused}, warning(ReasonInvalidApproval, "Verify", refused), ReasonInvalidApproval},
		{"refused approval, said before: each refusal is told", eventInput{stage: stageRefused, res: refused, said: true}, warning(ReasonInvalidApproval, "Verify", refused), ReasonInvalidApproval},
		{"privileged pod", eventInput{stage: stagePrivileged, res: privileged}, warning(ReasonPrivilegedPod, "Verify", privileged), ReasonPrivilegedPod},
		{"privileged pod, said before", eventInput{stage: stagePrivileged, res: privileged, said: true}, nil, ReasonPrivilegedPod},
		{"addresses not reserved", eventInput{stage: stageUnclaimed, res: quota}, warning(ReasonQuotaExceeded, "Attach", quota), ReasonQuotaExceeded},
		{"addresses not reserved, said before", eventInput{stage: stageUnclaimed, res: quota, said: true}, nil, ReasonQuotaExceeded},
		{"approval cannot be built", eventInput{stage: stageUnusable, res: unusable, said: true}, warning(ReasonAttachFailed, "Attach", unusable), ReasonAttachFailed},
		{"no underlay: only the condition says", eventInput{stage: stageUnderlay, res: unusable}, nil, ReasonAttachFailed},
		{"attached", eventInput{stage: stageApplied, res: attachedRes}, &podEvent{Type: corev1.EventTypeNormal, Reason: ReasonAttached, Action: "Attach", Message: attachedRes.Message}, ""},
		{"attached as before", eventInput{stage: stageApplied, res: attachedRes, wasAttached: true}, nil, ""},
		{"attached, announced lately", eventInput{stage: stageApplied, res: attachedRes, announced: true}, nil, ""},
		{"apply failed", eventInput{stage: stageApplied, res: failedRes, said: true}, warning(ReasonAttachFailed, "Attach", failedRes), ReasonAttachFailed},
		{"grant revoked", eventInput{stage: stageApplied, res: revokedRes, revoked: detached}, warning(ReasonGrantRevoked, "Detach", revokedRes), ReasonGrantRevoked},
		{"grant revoked, said before", eventInput{stage: stageApplied, res: revokedRes, revoked: detached, said: true}, nil, ""},
		{"grant narrowed", eventInput{stage: stageApplied, res: narrowedRes, revoked: narrowed}, warning(ReasonGrantNarrowed, "Narrow", narrowedRes), ReasonGrantNarrowed},
		{"grant narrowed, apply failed: the narrowing is what is new", eventInput{stage: stageApplied, res: failedRes, revoked: narrowed}, warning(ReasonGrantNarrowed, "Narrow", failedRes), ReasonGrantNarrowed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, countAs := eventFor(c.in)
			if !reflect.DeepEqual(got, c.want) || countAs != c.countAs {
				t.Errorf("eventFor(%+v) = %+v, %q; want %+v, %q", c.in, got, countAs, c.want, c.countAs)
			}
		})
	}
}
