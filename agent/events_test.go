package agent

import (
	"fmt"
	"net"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"podnet.io/podnet/agent/podstate"
	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/dataplane"
	"podnet.io/podnet/pkg/policy"
)

// TestEventFor: the Event that reports each way an attach can end, and
// the reason it is counted under.
func TestEventFor(t *testing.T) {
	refused := podstate.Result{Reason: v1alpha1.ReasonInvalidApproval, Message: "approval refused, nothing configured: signature does not verify"}
	privileged := podstate.Result{Reason: v1alpha1.ReasonPrivilegedPod, Message: `refused, nothing attached: container "app" adds NET_ADMIN`}
	cannot := podstate.Result{Reason: v1alpha1.ReasonNodeCannotCarry, Message: `node n2 cannot carry network "up" (interface net1, profile p) needs host link "data0"; no network attached`}
	quota := podstate.Result{Reason: v1alpha1.ReasonQuotaExceeded, Message: "quota of 2 addresses reached"}
	unusable := podstate.Result{Reason: v1alpha1.ReasonAttachFailed, Message: `approval interfaces[0] ("net1"): mac "zz": invalid MAC address`}
	attachedRes := podstate.Result{Ready: true, Reason: v1alpha1.ReasonAttached, Message: "attached: net1 (tenant/data)"}
	failedRes := podstate.Result{Reason: v1alpha1.ReasonAttachFailed, Message: `interface "net2": master "eth1": link not found`}
	conflictErr := fmt.Errorf("pod %q: %w", "uid-1", &dataplane.AddressConflictError{Interface: "net1", Address: net.ParseIP("192.0.2.5"), MAC: net.HardwareAddr{2, 0, 0, 0, 0, 5}})
	conflictRes := attachResult("tenant", &v1alpha1.Approval{}, nil, conflictErr)
	gatewayRes := attachResult("tenant", &v1alpha1.Approval{}, nil, &dataplane.GatewayUnansweredError{Interface: "net1", Gateway: net.ParseIP("192.0.2.1")})
	revokedRes := podstate.Result{Reason: v1alpha1.ReasonGrantRevoked, Message: `grant revoked, detached: net1 (network "data"): gone`}
	narrowedRes := podstate.Result{Ready: true, Reason: v1alpha1.ReasonGrantNarrowed, Message: "grant narrowed in place: net1 (network \"data\"): mtu 9000 lowered to 1500"}
	lowered := v1alpha1.ApprovedInterface{Interface: "net1", MTU: 1500}
	detached := []policy.Revocation{{Interface: "net1", Network: "data", Reason: "gone"}}
	narrowed := []policy.Revocation{{Interface: "net1", Network: "data", Reason: "mtu 9000 lowered to 1500", Narrowed: &lowered}}
	warning := func(reason, action string, res podstate.Result) *podEvent {
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
		{"refused approval", eventInput{stage: stageRefused, res: refused}, warning(v1alpha1.ReasonInvalidApproval, "Verify", refused), v1alpha1.ReasonInvalidApproval},
		{"refused approval, said before: each refusal is told", eventInput{stage: stageRefused, res: refused, said: true}, warning(v1alpha1.ReasonInvalidApproval, "Verify", refused), v1alpha1.ReasonInvalidApproval},
		{"privileged pod", eventInput{stage: stagePrivileged, res: privileged}, warning(v1alpha1.ReasonPrivilegedPod, "Verify", privileged), v1alpha1.ReasonPrivilegedPod},
		{"privileged pod, said before", eventInput{stage: stagePrivileged, res: privileged, said: true}, nil, v1alpha1.ReasonPrivilegedPod},
		{"node cannot carry", eventInput{stage: stageCannotCarry, res: cannot}, warning(v1alpha1.ReasonNodeCannotCarry, "Attach", cannot), v1alpha1.ReasonNodeCannotCarry},
		{"node cannot carry, said before: once", eventInput{stage: stageCannotCarry, res: cannot, said: true}, nil, v1alpha1.ReasonNodeCannotCarry},
		{"node cannot carry, announced on a write the cache does not show yet", eventInput{stage: stageCannotCarry, res: cannot, announced: true}, nil, v1alpha1.ReasonNodeCannotCarry},
		{"addresses not reserved", eventInput{stage: stageUnclaimed, res: quota}, warning(v1alpha1.ReasonQuotaExceeded, "Attach", quota), v1alpha1.ReasonQuotaExceeded},
		{"addresses not reserved, said before", eventInput{stage: stageUnclaimed, res: quota, said: true}, nil, v1alpha1.ReasonQuotaExceeded},
		{"approval cannot be built", eventInput{stage: stageUnusable, res: unusable, said: true}, warning(v1alpha1.ReasonAttachFailed, "Attach", unusable), v1alpha1.ReasonAttachFailed},
		{"no underlay: only the condition says", eventInput{stage: stageUnderlay, res: unusable}, nil, v1alpha1.ReasonAttachFailed},
		{"attached", eventInput{stage: stageApplied, res: attachedRes}, &podEvent{Type: corev1.EventTypeNormal, Reason: v1alpha1.ReasonAttached, Action: "Attach", Message: attachedRes.Message}, ""},
		{"attached as before", eventInput{stage: stageApplied, res: attachedRes, wasAttached: true}, nil, ""},
		{"attached, announced lately", eventInput{stage: stageApplied, res: attachedRes, announced: true}, nil, ""},
		{"apply failed", eventInput{stage: stageApplied, res: failedRes, said: true}, warning(v1alpha1.ReasonAttachFailed, "Attach", failedRes), v1alpha1.ReasonAttachFailed},
		{"address in use on the wire", eventInput{stage: stageApplied, res: conflictRes, said: true}, warning(v1alpha1.ReasonAddressConflict, "Attach", conflictRes), v1alpha1.ReasonAddressConflict},
		{"gateway did not answer", eventInput{stage: stageApplied, res: gatewayRes}, warning(v1alpha1.ReasonGatewayUnanswered, "Attach", gatewayRes), v1alpha1.ReasonGatewayUnanswered},
		{"grant revoked", eventInput{stage: stageApplied, res: revokedRes, revoked: detached}, warning(v1alpha1.ReasonGrantRevoked, "Detach", revokedRes), v1alpha1.ReasonGrantRevoked},
		{"grant revoked, said before", eventInput{stage: stageApplied, res: revokedRes, revoked: detached, said: true}, nil, ""},
		{"grant narrowed", eventInput{stage: stageApplied, res: narrowedRes, revoked: narrowed}, warning(v1alpha1.ReasonGrantNarrowed, "Narrow", narrowedRes), v1alpha1.ReasonGrantNarrowed},
		{"grant narrowed, apply failed: the narrowing is what is new", eventInput{stage: stageApplied, res: failedRes, revoked: narrowed}, warning(v1alpha1.ReasonGrantNarrowed, "Narrow", failedRes), v1alpha1.ReasonGrantNarrowed},
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
