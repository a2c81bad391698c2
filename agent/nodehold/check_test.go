package nodehold

import (
	"maps"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"

	"podnet.io/podnet/agent/podstate"
	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/hold"
	"podnet.io/podnet/pkg/hold/holdtest"
)

// TestHoldResult: the condition says so when the node cannot enforce the
// pod's hold, naming the mode and what the node lacks; it stays as it is
// where the node can, and for results that concern no hold.
func TestHoldResult(t *testing.T) {
	attached := podstate.Result{Ready: true, Reason: v1alpha1.ReasonAttached, Message: "attached: net1 (t1/data)"}
	failed := podstate.Result{Reason: v1alpha1.ReasonAttachFailed, Message: `interface "net1": boom`}
	none := podstate.Result{Ready: true, Reason: v1alpha1.ReasonNoNetworks, Message: "the pod asks for no networks"}
	nriPod := holdtest.Pod(false, holdtest.NRIAnnotated)
	for _, c := range []struct {
		name    string
		pod     *corev1.Pod
		cluster v1alpha1.HoldMode
		node    hold.Node
		res     podstate.Result
		want    podstate.Result
		says    []string
	}{
		{"nri connected, validator on", nriPod, v1alpha1.HoldNRI, hold.Node{NRI: true, NRIValidator: true}, attached, attached, nil},
		{"nri connected, validator off", nriPod, v1alpha1.HoldNRI, hold.Node{NRI: true}, attached,
			podstate.Result{Ready: true, Reason: v1alpha1.ReasonHoldNotEnforced}, []string{"held by nri", "does not run NRI's default validator", "hold.podnet.io/nri"}},
		{"nri not connected", nriPod, v1alpha1.HoldNRI, hold.Node{ChainedCNI: true}, attached,
			podstate.Result{Ready: true, Reason: v1alpha1.ReasonHoldNotEnforced}, []string{"attached: net1 (t1/data)", "held by nri", "no NRI plugin connected", "may start before its networks"}},
		{"nri not connected, attach failed", nriPod, v1alpha1.HoldNRI, hold.Node{}, failed,
			podstate.Result{Reason: v1alpha1.ReasonAttachFailed}, []string{"boom", "hold not enforced", "held by nri"}},
		{"sandbox setup without the plugin", holdtest.Pod(false, nil), v1alpha1.HoldAttachAtSandboxSetup, hold.Node{NRI: true}, attached,
			podstate.Result{Ready: true, Reason: v1alpha1.ReasonHoldNotEnforced}, []string{"held by attachAtSandboxSetup", "--cni-socket"}},
		{"wait container anywhere", holdtest.Pod(true, nil), v1alpha1.HoldWaitInitContainer, hold.Node{}, attached, attached, nil},
		{"no hold to tell", holdtest.Pod(false, nil), v1alpha1.HoldNRI, hold.Node{}, attached, attached, nil},
		{"no networks", nriPod, v1alpha1.HoldNRI, hold.Node{}, none, none, nil},
	} {
		got := holdResult(c.pod, c.cluster, c.node, c.res)
		if got.Ready != c.want.Ready || got.Reason != c.want.Reason {
			t.Errorf("%s: %+v, want ready=%v reason %s", c.name, got, c.want.Ready, c.want.Reason)
		}
		if c.says == nil && got.Message != c.res.Message {
			t.Errorf("%s: message %q changed", c.name, got.Message)
		}
		for _, s := range c.says {
			if !strings.Contains(got.Message, s) {
				t.Errorf("%s: message %q does not say %q", c.name, got.Message, s)
			}
		}
	}
	// Judged twice (the reconciler writes the same result again), the
	// message does not grow.
	once := holdResult(nriPod, v1alpha1.HoldNRI, hold.Node{}, attached)
	if twice := holdResult(nriPod, v1alpha1.HoldNRI, hold.Node{}, once); twice != once {
		t.Errorf("judged twice: %+v, once %+v", twice, once)
	}
}

// TestHoldCheckMetric: the gauge follows what the node offers at each
// scrape, one series per mode; a nil Check changes no result.
func TestHoldCheckMetric(t *testing.T) {
	reg := prometheus.NewRegistry()
	node := hold.Node{}
	h, err := NewCheck(reg, v1alpha1.HoldNRI, func() hold.Node { return node })
	if err != nil {
		t.Fatal(err)
	}
	want := func(wait, sandbox, nri float64) {
		t.Helper()
		got := enforceable(t, reg)
		if w := map[string]float64{"waitInitContainer": wait, "attachAtSandboxSetup": sandbox, "nri": nri}; !maps.Equal(got, w) {
			t.Errorf("podnet_agent_hold_mode_enforceable %v, want %v", got, w)
		}
	}
	want(1, 0, 0)
	node = hold.Node{NRI: true}
	want(1, 0, 0)
	node = hold.Node{NRI: true, NRIValidator: true}
	want(1, 0, 1)
	node = hold.Node{ChainedCNI: true}
	want(1, 1, 0)
	attached := podstate.Result{Ready: true, Reason: v1alpha1.ReasonAttached, Message: "attached"}
	pod := holdtest.Pod(false, holdtest.NRIAnnotated)
	node = hold.Node{NRI: true, NRIValidator: true}
	if got := h.Judge(pod, attached); got != attached {
		t.Errorf("connected: %+v", got)
	}
	node = hold.Node{}
	if got := h.Judge(pod, attached); got.Reason != v1alpha1.ReasonHoldNotEnforced {
		t.Errorf("disconnected: %+v", got)
	}
	var none *Check
	if got := none.Judge(pod, attached); got != attached {
		t.Errorf("nil Check: %+v", got)
	}
	if _, err := NewCheck(reg, v1alpha1.HoldNRI, func() hold.Node { return node }); err == nil {
		t.Error("registered twice")
	}
}

// enforceable gathers podnet_agent_hold_mode_enforceable by mode.
func enforceable(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "podnet_agent_hold_mode_enforceable" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "mode" {
					got[l.GetValue()] = m.GetGauge().GetValue()
				}
			}
		}
	}
	return got
}
